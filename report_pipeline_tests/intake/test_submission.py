"""The intake API's core, with a hand-written launcher standing in for the webserver."""

from __future__ import annotations

import pytest

from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.sources import registered_name
from report_pipeline.core.intake.submission import REVISION_TAG, submit
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import files_under


class RecordingLauncher:
    """Keeps launched runs in memory, tagged like Dagster would."""

    def __init__(self) -> None:
        self.runs: list[dict] = []

    def runs_tagged(self, key, value):
        return [(r["id"], r["status"]) for r in self.runs if r["tags"].get(key) == value]

    def launch(self, month, stage_config, tags):
        self.runs.append({"id": f"run-{len(self.runs)}", "status": "QUEUED", "tags": tags,
                          "month": month, "config": stage_config})  # fmt: skip
        return self.runs[-1]["id"]


@pytest.fixture
def launcher() -> RecordingLauncher:
    return RecordingLauncher()


def call(ref, source, tmp_path, launcher, month="2026-09", **limits):
    settings = PipelineSettings(tmp_path / "work", Limits(**limits))
    store = LocalStore(tmp_path / "store")
    return submit(str(ref), month, [source], settings, lambda m: m <= "2026-10", launcher, store)


def test_a_report_is_registered_launched_once_and_then_a_duplicate(
    source, drop, tmp_path, launcher
):
    upload = drop("repeated_image.pdf", folder="uploads", name="Q3 draft.pdf")
    first = call(upload, source, tmp_path, launcher)
    assert first.status == "launched" and first.admission.report_id == "inbox-2026-09"
    (run,) = launcher.runs
    assert run["month"] == "2026-09" and run["tags"][REVISION_TAG] == first.admission.revision
    assert run["config"]["report_key"] == first.admission.ref.key
    assert first.admission.ref.month == "2026-09"  # registered into the month folder
    again = call(upload, source, tmp_path, launcher)
    assert (again.status, again.run_id, len(launcher.runs)) == ("duplicate", first.run_id, 1)
    same_bytes = drop("repeated_image.pdf", folder="2026-09", name="renamed.pdf")
    assert call(same_bytes, source, tmp_path, launcher).status == "duplicate"


def test_a_failed_run_keeps_its_claim_and_a_resubmit_points_to_it(source, drop, tmp_path, launcher):
    upload = drop("no_images.pdf", folder="2026-09")
    first = call(upload, source, tmp_path, launcher)
    launcher.runs[0]["status"] = "FAILURE"
    second = call(upload, source, tmp_path, launcher)
    assert (second.status, second.run_id, len(launcher.runs)) == ("failed", first.run_id, 1)
    assert f"its run {first.run_id} ended FAILURE; re-execute it from failure" in second.detail
    retry = {**launcher.runs[0], "id": "run-retry", "status": "STARTED"}  # Dagster's run retry
    launcher.runs.append(retry)  # inherits the parent's tags, the claim's token among them
    third = call(upload, source, tmp_path, launcher)
    assert (third.status, third.run_id) == ("duplicate", "run-retry")


def test_a_content_submitted_again_after_a_later_one_arrived_is_refused_as_superseded(
    source, drop, tmp_path, launcher
):
    first = call(drop("no_images.pdf", folder="uploads", name="v1.pdf"), source, tmp_path, launcher)
    later = drop("repeated_image.pdf", folder="uploads", name="v2.pdf")
    second = call(later, source, tmp_path, launcher)
    assert (first.status, second.status) == ("launched", "launched")
    with pytest.raises(RefusedInput) as caught:
        call(tmp_path / "inbox" / "uploads" / "v1.pdf", source, tmp_path, launcher)
    assert caught.value.code == "superseded" and caught.value.message == (
        f"this report's content arrived in 2026-09 before "
        f"{registered_name(second.admission.source_hash)}, which superseded it; submit a "
        "corrected file with new content"
    )
    assert len(launcher.runs) == 2
    assert call(later, source, tmp_path, launcher).status == "duplicate"  # still the latest


@pytest.mark.parametrize(
    ("fixture", "limits", "code"),
    [("not_a_pdf.pdf", {}, "not_pdf"), ("encrypted.pdf", {}, "encrypted"),
     ("truncated_pdf.pdf", {}, "bad_page_tree"),
     ("count_too_large.pdf", {}, "page_count_mismatch"), ("monthly_report.pdf", {"max_pages": 10},
     "too_many_pages"), ("monthly_report.pdf", {"max_report_bytes": 1000}, "too_large")],
)  # fmt: skip
def test_refusals_launch_nothing_and_write_nothing(
    source, drop, tmp_path, launcher, fixture, limits, code
):
    upload = drop(fixture, folder="uploads")
    with pytest.raises(RefusedInput) as caught:
        call(upload, source, tmp_path, launcher, **limits)
    assert caught.value.code == code and fixture not in str(caught.value)
    assert launcher.runs == [] and files_under(tmp_path / "work") == []
    assert [p.name for p in files_under(tmp_path / "inbox")] == [fixture]


@pytest.mark.parametrize(
    ("month", "code"), [("2026-13", "bad_month"), ("2026-11", "unknown_partition"),
                        ("2026-08", "month_mismatch")],
)  # fmt: skip
def test_months_are_checked_before_any_bytes_are_read(
    source, drop, tmp_path, launcher, month, code
):
    path = drop("no_images.pdf", folder="2026-09")
    with pytest.raises(RefusedInput, match=code):
        call(path, source, tmp_path, launcher, month=month)
    assert launcher.runs == []

"""The four deployment gates (docs/operate.md), through Dagster with real storage."""

import json

import dagster as dg
import pytest

from report_pipeline.core.model.store_json import read_manifest
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.defs.conftest import events, materialization
from report_pipeline_tests.faults import FaultyStoreResource

pytestmark = pytest.mark.slow


def objects(tmp_path, arrivals: bool = True):
    """Every stored object's mtime; without the months' arrivals ledgers (intake's record of
    which files it has seen) when `arrivals` is False."""
    store = LocalStore(tmp_path / "store")
    found = {o.key: (store.root / o.key).stat().st_mtime_ns for o in store.list("")}
    return {k: v for k, v in found.items() if arrivals or "/arrivals/" not in k}


def stored_manifest(tmp_path, result):
    key = result.output_for_node("report_manifest").manifest_key
    return read_manifest(LocalStore(tmp_path / "store"), key)


def test_gate1_duplicate_submission_produces_one_manifest(tmp_path, inbox, materialize):
    inbox("repeated_image.pdf")
    first = materialize()
    assert first.success
    before = objects(tmp_path, arrivals=False)
    inbox("repeated_image.pdf", as_name="same-bytes-other-name.pdf")  # a duplicate upload
    second = materialize()
    assert second.success and materialization(second)["reused_existing_manifest"] is True
    assert objects(tmp_path, arrivals=False) == before  # no new objects, nothing rewritten
    assert [k for k in before if k.endswith("manifest.json")] == [
        first.output_for_node("report_manifest").manifest_key
    ]
    assert second.output_for_node("report_manifest") == first.output_for_node("report_manifest")
    assert events(second, "STEP_SUCCESS", "extract_pages") == []


def test_gate2_transient_storage_timeout_is_retried_and_archived_once(tmp_path, inbox, materialize):
    inbox("repeated_image.pdf")
    # the archive step's write of its task's child records
    flaky = FaultyStoreResource(
        root=str(tmp_path / "store"), method="put_bytes", method_key="archive/*/children/*",
        failures=2, counter_file=str(tmp_path / "faults"),
    )  # fmt: skip
    result = materialize(store=flaky)
    assert result.success
    assert len(events(result, "STEP_UP_FOR_RETRY", "archive_pages")) == 2
    assert events(result, "STEP_UP_FOR_RETRY", "extract_pages") == []
    manifest = stored_manifest(tmp_path, result)
    assert {c.attempts for c in manifest.children} == {3}
    assert manifest.metrics.validated_first_attempt_pct == 0.0
    images = [k for k in objects(tmp_path) if "/images/" in k]
    assert len(images) == manifest.counts.distinct_images == 2  # archived exactly once
    assert manifest.state == "complete" and manifest.counts.archived == 15


def test_gate3_malformed_bytes_reach_quarantine_without_retries(inbox, materialize, tmp_path):
    inbox("type_mismatch.pdf")
    result = materialize()
    assert result.success
    assert events(result, "STEP_UP_FOR_RETRY") == [] and events(result, "STEP_RESTARTED") == []
    manifest = stored_manifest(tmp_path, result)
    (child,) = manifest.children
    assert (child.state, child.quarantine_reason, child.attempts) == (
        "quarantined", "signature_mismatch", 1,
    )  # fmt: skip
    table = materialization(result)["quarantined_items"]
    assert [r.data["reason"] for r in table.records] == ["signature_mismatch"]


def workdirs(tmp_path):
    """Private workdirs left under the work root (empty hour buckets are the janitor's)."""
    return sorted(p.name for p in (tmp_path / "work").rglob("w-*"))


def test_gate4_worker_removes_its_private_dir_on_success_and_quarantine(
    tmp_path, inbox, materialize
):
    inbox("truncated_jpeg.pdf")  # one image archived, one quarantined
    assert materialize().success
    assert (tmp_path / "work").is_dir() and workdirs(tmp_path) == []


def test_gate4_worker_removes_its_private_dir_on_failure(tmp_path, inbox, materialize):
    inbox("truncated_jpeg.pdf")
    broken = FaultyStoreResource(
        root=str(tmp_path / "store"),
        method="put_bytes",
        failures=10**6,
        transient=False,
        after=3,  # staging writes its deadline marker, the planned draws and the plan; then the
        # extract step, in its private dir, writes its marker before any upload
        counter_file=str(tmp_path / "faults"),
        watch_dir=str(tmp_path / "work"),
    )
    result = materialize(store=broken)
    assert not result.success
    (failure,) = events(result, "STEP_FAILURE")
    assert failure.step_key.startswith("report_manifest.extract_pages[")
    assert "dead letter after 1 attempt(s)" in failure.step_failure_data.error.message
    assert events(result, "STEP_UP_FOR_RETRY") == []  # a permanent error is not retried
    (during,) = json.loads((tmp_path / "faults.seen").read_text())
    assert during["mode"] == 0o700 and during["lease"]["owner"].startswith(result.run_id)
    assert workdirs(tmp_path) == []  # ...and gone after the failure


def test_exhausted_transient_errors_become_a_dead_letter(tmp_path, inbox, materialize, monkeypatch):
    """Retried at once: gate 2 above waits out the policy's backoff between attempts (0.5 s,
    then 1 s); its three waits here (0.5, 1 and 2 s, with jitter) count nothing more."""
    monkeypatch.setattr(dg.RetryPolicy, "calculate_delay", lambda self, attempt_num: 0)
    inbox("repeated_image.pdf")
    # the archive step's write of its task's child records
    down = FaultyStoreResource(
        root=str(tmp_path / "store"), method="put_bytes", method_key="archive/*/children/*",
        failures=10**6, counter_file=str(tmp_path / "faults"),
    )  # fmt: skip
    result = materialize(store=down)
    assert not result.success
    assert len(events(result, "STEP_UP_FOR_RETRY", "archive_pages")) == 3  # 4 attempts in all
    (failure,) = events(result, "STEP_FAILURE")
    assert "dead letter after 4 attempt(s)" in failure.step_failure_data.error.message
    assert not [k for k in objects(tmp_path) if k.endswith("manifest.json")]

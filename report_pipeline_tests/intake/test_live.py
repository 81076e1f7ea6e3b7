"""Gate 1 through the real path: a real webserver and daemon (`dagster dev`), the real sensor
loop, `report-pipeline submit` over GraphQL, and runs in their own processes. The same report
submitted twice, by the sensor and by `submit` in either order, makes one run, one manifest and
one set of objects. A backfill launched through GraphQL, as the UI does, completes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from report_pipeline.cli import main
from report_pipeline.core.intake.sources import registered_name
from report_pipeline.core.intake.submission import REPORT_ID_TAG, REVISION_TAG
from report_pipeline_tests.intake.live import BACKFILL, LiveDagster, finished, place, wait_for

pytestmark = pytest.mark.live


@pytest.fixture
def cli_env(live, monkeypatch) -> None:
    for name, value in live.env.items():
        monkeypatch.setenv(name, value)


def submit(live: LiveDagster, ref: Path, month: str, capsys) -> dict:
    assert main(["submit", str(ref), "--month", month, "--url", live.url, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def archive_of(live: LiveDagster, report_id: str) -> tuple[list[Path], list[Path]]:
    base = live.root / "store" / "archive" / report_id
    return sorted(base.glob("*/manifest.json")), sorted(base.glob("*/images/*.png"))


def test_sensor_first_then_submit_makes_one_run_one_manifest_one_set_of_objects(
    live, cli_env, capsys
):
    place(live.root, "repeated_image.pdf", "2026-08", "August report.pdf")
    report_id = {REPORT_ID_TAG: "inbox-2026-08"}
    (run,) = wait_for(lambda: finished(live, report_id), "the sensor's run for 2026-08", 180)
    assert run["tags"]["dagster/sensor_name"] == "new_report_sensor"
    answer = submit(live, live.root / "inbox" / "2026-08" / "August report.pdf", "2026-08", capsys)
    assert (answer["status"], answer["run_id"]) == ("duplicate", run["id"])
    assert answer["revision"] == run["tags"][REVISION_TAG] == run["tags"]["dagster/run_key"]
    assert len(live.runs({REVISION_TAG: answer["revision"]})) == 1
    manifests, images = archive_of(live, "inbox-2026-08")
    assert len(manifests) == 1 and len(images) == 2  # repeated_image.pdf: 2 distinct images
    manifest = json.loads(manifests[0].read_text())
    assert manifest["state"] == "complete" and manifest["source_hash"] == answer["source_hash"]


def test_submit_first_then_the_sensor_makes_one_run_and_identical_bytes_start_nothing(
    live, cli_env, capsys
):
    upload = place(live.root, "truncated_jpeg.pdf", "uploads", "Q3 draft.pdf")
    answer = submit(live, upload, "2026-09", capsys)
    assert answer["status"] == "launched" and answer["report_id"] == "inbox-2026-09"
    revision = {REVISION_TAG: answer["revision"]}
    (run,) = wait_for(lambda: finished(live, revision), "the submitted run", 180)
    assert run["id"] == answer["run_id"] and "dagster/sensor_name" not in run["tags"]
    registered = f"2026-09/{registered_name(answer['source_hash'])}"  # where submit copied it
    seen = f"inbox {registered}: revision {answer['revision']} already has run {answer['run_id']}"
    wait_for(lambda: seen in live.skip_reasons(), "the sensor to find the registered report")
    place(live.root, "truncated_jpeg.pdf", "2026-09", "same bytes, new name.pdf")
    same = "inbox 2026-09/same bytes, new name.pdf: same content as the month's report"
    wait_for(lambda: any(same in r for r in live.skip_reasons()), "a sensor tick")
    assert submit(live, upload, "2026-09", capsys)["run_id"] == answer["run_id"]
    assert live.runs({REPORT_ID_TAG: "inbox-2026-09"}) == [run]
    manifests, images = archive_of(live, "inbox-2026-09")
    assert len(manifests) == 1 and len(images) == 1  # truncated_jpeg.pdf: 1 valid image


def test_a_backfill_of_three_months_launched_through_graphql_completes(live):
    """Launched by the fixture before the daemon started; the daemon marks it complete on its
    next backfill loop (every 30 s), which the gate tests above usually outlast."""
    query = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
        ... on PartitionBackfill { status } } }"""

    def status() -> str:
        found = live.graphql(query, {"id": live.backfill_id})["partitionBackfillOrError"]
        return found["status"] if found["status"] != "REQUESTED" else ""

    assert wait_for(status, "the backfill to complete", 180) == "COMPLETED_SUCCESS"
    runs = live.runs({"dagster/backfill": live.backfill_id})
    assert sorted(r["tags"]["dagster/partition"] for r in runs) == BACKFILL
    assert {r["status"] for r in runs} == {"SUCCESS"}
    for month in BACKFILL:
        manifests, _ = archive_of(live, f"inbox-{month}")
        assert len(manifests) == 1 and json.loads(manifests[0].read_text())["state"] == "complete"

"""The UI after a backfill over three months, one without a report (the sequence of issue 18's
"Done when"): `make dev` on a fresh instance with new_report_sensor stopped, the fixture report in
the inbox for 2026-09 and 2026-10 and nothing for 2026-08, and the backfill launched through
GraphQL as the asset page launches it (report_manifest only).

Then: no run fails and no check of 2026-08 reads "Execution failed" or fails at ERROR; the late
months warn on report_archived_on_time; manifest_table follows both archived months (declarative
automation) with page 87's rows in its materialization, reached from the asset's page in two
clicks; `report-pipeline show 2026-10 --page 87 --json` lists exactly the manifest's records."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from report_pipeline.cli import main
from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.model.store_json import child_to_json
from report_pipeline.core.review.queue import pending
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.intake.live import LiveDagster, launch_backfill, place, wait_for
from report_pipeline_tests.operate.devserver import LAUNCH, make_dev

pytestmark = pytest.mark.live

MONTHS = ["2026-08", "2026-09", "2026-10"]  # 2026-08: no report in the inbox
ARCHIVED = MONTHS[1:]
ASSET = dg.AssetKey("report_manifest")
BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status } } }"""


@pytest.fixture
def backfilled(tmp_path: Path) -> Iterator[tuple[LiveDagster, str, str]]:
    """`make dev` after the backfill and manifest_table's automation: (server, backfill id,
    the backfill's final status)."""
    with make_dev(tmp_path / "dagster", report=None) as live:
        live.set_sensor(running=False)
        for month in ARCHIVED:
            place(live.root, "monthly_report.pdf", month, "monthly_report.pdf")
        backfill_id = launch_backfill(live, MONTHS)

        def ended() -> str:
            status = live.graphql(BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
            return "" if status["status"] == "REQUESTED" else status["status"]

        status = wait_for(ended, "the backfill to end", 480)
        with dg.DagsterInstance.from_config(str(live.home)) as instance:
            wait_for(lambda: _tables(instance) == set(ARCHIVED), "manifest_table's runs", 300)
        yield live, backfill_id, status


def _tables(instance: dg.DagsterInstance) -> set[str]:
    return instance.get_materialized_partitions(dg.AssetKey("manifest_table"))


def test_a_backfill_with_a_month_without_a_report_is_shown_truthfully(
    backfilled, page: Page, shot, monkeypatch, capsys
):
    live, backfill_id, status = backfilled
    runs = live.runs({"dagster/backfill": backfill_id})
    assert sorted((r["tags"]["dagster/partition"], r["status"]) for r in runs) == [
        (month, "SUCCESS") for month in MONTHS
    ]  # 2026-08's run too: no failed run, no stack trace
    # Dagster 1.13.27 ends an asset backfill COMPLETED_FAILED when a run succeeded without
    # materializing its partition (dagster-io/dagster#34219, open): every run above succeeded.
    # When this fails after an upgrade, the fix has landed: expect COMPLETED_SUCCESS.
    assert status == "COMPLETED_FAILED"

    with dg.DagsterInstance.from_config(str(live.home)) as instance:
        assert instance.get_materialized_partitions(ASSET) == set(ARCHIVED)  # 2026-08: Missing
        for name in ("manifest_complete", "archive_matches_manifest", "first_attempt_validation",
                     "quarantine_rate", "queue_age_p95", "report_archived_on_time",
                     "quarantine_reviewed", "pages_drawn_whole"):  # fmt: skip
            latest = _latest_by_month(instance, name)  # overdue_report_sensor flags the rest
            for month, (status, severity) in ((m, latest[m]) for m in MONTHS):
                late = name == "report_archived_on_time"  # every month here is long past due
                want = ("FAILED", "WARN") if late else ("SUCCEEDED", severity)
                assert (status, severity) == want, (name, month, status, severity)
        table = _table_rows(instance, "2026-10")
        assert len(table) >= 423 and [r["page"] for r in table].count(87) == 3

    store = LocalStore(live.root / "store")
    _, manifest = latest_archived(store, "2026-10")
    monkeypatch.setenv("REPORT_PIPELINE_STORE", str(live.root / "store"))
    assert main(["show", "2026-10", "--page", "87", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert records == [child_to_json(c) for c in manifest.children if c.page == 87]

    # The UI: the asset graph's check summary (no red), the late month's warning, page 87's rows.
    page.goto(f"{live.url}/locations/report_pipeline/asset-groups/reports")
    _skip_community_popup(page)
    node = page.locator("div").filter(has=page.get_by_text("report_manifest", exact=True))
    expect(node.get_by_text(re.compile(r"^7 / 8 Passed$")).first).to_be_visible()
    shot("asset_graph_checks")
    page.goto(f"{live.url}/assets/report_manifest?view=checks")
    page.get_by_text("report_archived_on_time", exact=True).first.click()
    expect(page.get_by_text("report archived late", exact=True)).to_be_visible()
    shot("late_month_warning")
    page.goto(f"{live.url}/assets/manifest_table")
    page.get_by_role("tab", name="Partitions", exact=True).click()  # click 1
    page.get_by_text("2026-10", exact=True).first.click()  # click 2
    rows = page.locator("xpath=//tr[td[1][normalize-space()='87']]")  # the page column
    expect(rows).to_have_count(3)
    rows.first.scroll_into_view_if_needed()
    expect(rows.first).to_be_visible()
    expect(rows.first).to_contain_text("archived")
    shot("page_87_rows")
    page.goto(f"{live.url}/runs/b/{backfill_id}?tab=runs")
    expect(page.get_by_text("Success").first).to_be_visible()
    shot("backfill_runs")
    _review_from_the_launchpad(live, store, page, shot)


def _review_from_the_launchpad(live, store: LocalStore, page: Page, shot) -> None:
    """quarantine_review_job launched as the Launchpad launches it (its config: month,
    sequence, decision, reviewer, note): a new revision of 2026-10, its checks on the month."""
    (mismatch,) = [i for i in pending(store, ["2026-10"]) if i.reason == "signature_mismatch"]
    config = {"month": "2026-10", "sequence": mismatch.sequence, "decision": "accept",
              "reviewer": "ops.kim", "note": "PNG bytes, a harmless encoder"}  # fmt: skip
    params = {
        "selector": {"repositoryLocationName": "report_pipeline",
                     "repositoryName": "__repository__", "jobName": "quarantine_review_job"},
        "runConfigData": {"ops": {"decide_quarantined_image": {"config": config}}},
    }  # fmt: skip
    launched = live.graphql(LAUNCH, {"p": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    wait_for(lambda: live.status(run_id) in {"SUCCESS", "FAILURE"}, "the review run", 180)
    assert live.status(run_id) == "SUCCESS"
    _, manifest = latest_archived(store, "2026-10")
    assert manifest.previous_revision == mismatch.revision
    (child,) = [c for c in manifest.children if c.sequence == mismatch.sequence]
    assert (child.state, child.review.reviewer) == ("archived", "ops.kim")
    with dg.DagsterInstance.from_config(str(live.home)) as instance:
        latest = _latest_by_month(instance, "quarantine_reviewed")
        assert latest["2026-10"] == ("SUCCEEDED", "WARN")
    page.goto(f"{live.url}/runs/{run_id}")
    expect(page.get_by_text(re.compile(r"image \d+ of 2026-10: ")).first).to_be_visible()
    shot("quarantine_review_run")


def _latest_by_month(instance: dg.DagsterInstance, name: str) -> dict[str, tuple[str, str]]:
    """Each month's newest record of a check: (status, severity of its evaluation)."""
    key = dg.AssetCheckKey(ASSET, name)
    latest: dict[str, tuple[str, str]] = {}
    for record in instance.event_log_storage.get_asset_check_execution_history(key, limit=50):
        evaluation = record.event.dagster_event.event_specific_data if record.event else None
        severity = getattr(getattr(evaluation, "severity", None), "value", "")
        latest.setdefault(record.partition, (record.status.value, severity))
    return latest


def _table_rows(instance: dg.DagsterInstance, month: str) -> list[dict]:
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("manifest_table"), asset_partitions=[month]),
        limit=1,
    ).records
    return [row.data for row in record.asset_materialization.metadata["images"].value.records]


def _skip_community_popup(page: Page) -> None:
    skip = page.get_by_role("button", name="Skip", exact=True)
    try:
        skip.click(timeout=5_000)
    except PlaywrightTimeout:  # the pop-up shows on a fresh instance's first visit only
        return

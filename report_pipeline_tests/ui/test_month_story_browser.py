"""A month after its first archive, in the browser against `make dev` (issue 29's "Done when"):

1. the fixture report is archived as 2026-10 by new_report_sensor;
2. a quarantined image is rejected from the shell, and within 60 s the latest materializations
   of report_manifest and manifest_table name the new revision and show the decision, every
   store key in their metadata existing;
3. a corrected copy (page 87 removed) dropped into 2026-10 with an older mtime (`cp -p`) is
   picked up within two sensor ticks: the month's revision has 139 pages, the one before is a
   tombstone whose objects were deleted (audited), the deadline is unchanged, the rejected
   image keeps its decision;
4. a UI launch of 2026-10 archives nothing new and does not bring the old file back;
5. with the extractor version raised (REPORT_PIPELINE_EXTRACTOR_VERSION, `make dev` restarted)
   the UI marks 2026-10 Unsynced, the documented action (Materialize) re-extracts it, and the
   month has exactly one complete revision with its deadline unchanged.
Each step leaves a screenshot in the test's tmp folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import dagster as dg
import pymupdf
import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from report_pipeline.core.archive.months import latest_archived, month_manifests
from report_pipeline.core.model import current as month_record
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.settings import EXTRACTOR_VERSION
from report_pipeline.core.retention import deletion_log
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.intake.live import BIN, LiveDagster, wait_for
from report_pipeline_tests.operate.devserver import make_dev

pytestmark = pytest.mark.live

MONTH = "2026-10"  # a month long closed, whatever today is
ASSETS = (dg.AssetKey("report_manifest"), dg.AssetKey("manifest_table"))
NEXT = str(int(EXTRACTOR_VERSION) + 1)  # the upgrade the test makes
SENSOR_TICK = 30  # new_report_sensor's and current_revision_sensor's interval (seconds)
STALE = """query($p: String!) { assetNodeOrError(assetKey: {path: ["report_manifest"]}) {
    ... on AssetNode { staleCauses(partition: $p) { reason } } } }"""


def test_a_month_keeps_one_truth_through_a_review_a_correction_and_an_upgrade(
    tmp_path: Path, page: Page, shot
) -> None:
    root = tmp_path / "dagster"
    store = LocalStore(root / "store")
    with make_dev(root, report=None) as live:
        first = _archived_by_the_sensor(live, store, page, shot)
        decided = _rejected_from_the_shell(live, store, page, shot)
        corrected = _corrected_with_an_older_mtime(live, store, first, decided, page, shot)
        _launched_from_the_ui(live, store, corrected, page, shot)
    env = {"REPORT_PIPELINE_EXTRACTOR_VERSION": NEXT}
    with make_dev(root, report=None, extra_env=env) as live:
        _upgraded(live, store, first, corrected, page, shot)


def _archived_by_the_sensor(live: LiveDagster, store: LocalStore, page: Page, shot):
    target = root_inbox(live) / "monthly_report.pdf"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(fixture_pdf("monthly_report.pdf").read_bytes())
    wait_for(lambda: _succeeded(live, 1), "the sensor's run of 2026-10", 300)
    _, manifest = latest_archived(store, MONTH)
    assert manifest.counts.pages == 140 and manifest.source_file.name == "monthly_report.pdf"
    _open_partition(live, page, "report_manifest")
    expect(page.get_by_text(manifest.parent_revision).first).to_be_visible()
    shot("archived_by_the_sensor")
    return manifest


def _rejected_from_the_shell(live: LiveDagster, store: LocalStore, page: Page, shot):
    listed = json.loads(_cli(live, "quarantine", "list", MONTH, "--json"))
    (truncated,) = [item for item in listed if item["reason"] == "truncated"]
    started = time.monotonic()
    sequence = str(truncated["sequence"])
    decide = ["quarantine", "decide", MONTH, sequence, "reject", "--reviewer", "josé", "--note",
              "cut off", "--json"]  # fmt: skip
    done = json.loads(_cli(live, *decide))
    revision = done["revision"]

    def shown() -> bool:
        return all(_latest(live, key).get("revision") == revision for key in ASSETS)

    wait_for(shown, "both assets to show the decision's revision", 120)
    elapsed = time.monotonic() - started
    print(f"decision shown in the UI after {elapsed:.0f} s")
    assert elapsed <= 60, f"the UI followed the decision after {elapsed:.0f} s, over 60 s"
    manifest_meta, table_meta = (_latest(live, key) for key in ASSETS)
    for key in (manifest_meta["manifest_key"], table_meta["table_key"]):
        assert store.exists(key), f"metadata names a deleted key: {key}"
    rows = [r.data for r in table_meta["images"].records]
    assert [r["review"] for r in rows if r["sequence"] == truncated["sequence"]] == ["rejected"]
    _open_partition(live, page, "manifest_table")
    expect(page.get_by_text(revision).first).to_be_visible()
    expect(page.get_by_text("rejected", exact=True).first).to_be_visible()
    shot("decision_in_manifest_table")
    _open_partition(live, page, "report_manifest")
    expect(page.get_by_text(revision).first).to_be_visible()
    shot("decision_in_report_manifest")
    return truncated


def _corrected_with_an_older_mtime(
    live: LiveDagster, store: LocalStore, first, decided: dict, page: Page, shot
):
    original = root_inbox(live) / "monthly_report.pdf"
    staging = live.root / "monthly_report_corrected.pdf"
    with pymupdf.open(original) as doc:
        doc.delete_page(86)  # page 87
        doc.save(staging)
    older = original.stat().st_mtime - 86_400
    os.utime(staging, (older, older))
    target = root_inbox(live) / staging.name
    subprocess.run(["cp", "-p", str(staging), str(target)], check=True)  # keeps the older mtime
    before = latest_archived(store, MONTH)[1]
    started = time.monotonic()
    wait_for(lambda: _runs(live) >= 2, "the sensor to request the corrected report", 3 * 60)
    picked = time.monotonic() - started
    print(f"corrected report picked up after {picked:.0f} s")
    assert picked <= 2 * SENSOR_TICK + 15, f"picked up after {picked:.0f} s: over two ticks"
    wait_for(lambda: _succeeded(live, 2), "the corrected report's run", 300)
    _, now = latest_archived(store, MONTH)
    assert now.counts.pages == 139 and now.source_file.name == staging.name
    assert "monthly_report.pdf" in now.source_file.superseded
    assert now.deadlines.archive_delete_by == first.deadlines.archive_delete_by
    tomb = store_json.read_manifest(
        store, keys.manifest_key(before.report_id, before.parent_revision)
    )
    assert tomb.state == "expired" and tomb.superseded_by == now.parent_revision
    left = [o.key for o in store.list(keys.archive_prefix(tomb.report_id, tomb.parent_revision))]
    assert left == [keys.manifest_key(tomb.report_id, tomb.parent_revision)]
    events = deletion_log.read(store, _parse(first.created_at))
    assert tomb.parent_revision in {e.revision for e in events if e.kind == "superseded"}
    kept = [c for c in now.children if c.review and c.review.decision == "rejected"]
    assert len(kept) == 1 and kept[0].quarantine_reason == decided["reason"]
    complete = [m for _, m in month_manifests(store, MONTH) if m.state == "complete"]
    assert complete == [now]
    _open_partition(live, page, "report_manifest")
    expect(page.get_by_text(staging.name).first).to_be_visible()
    shot("corrected_report_is_the_months")
    return now


def _launched_from_the_ui(live: LiveDagster, store: LocalStore, corrected, page: Page, shot):
    chain = month_record.history(store, MONTH)
    run_id = _materialize_in_the_ui(live, page, shot, "ui_launch")
    assert live.status(run_id) == "SUCCESS"
    assert month_record.history(store, MONTH) == chain  # nothing new archived
    assert latest_archived(store, MONTH)[1] == corrected  # the old file not brought back
    shown = _latest(live, ASSETS[0])
    assert shown["revision"] == corrected.parent_revision
    assert shown["report_file"] == corrected.source_file.name
    assert shown["reused_existing_manifest"] is True


def _upgraded(live: LiveDagster, store: LocalStore, first, corrected, page: Page, shot):
    causes = live.graphql(STALE, {"p": MONTH})["assetNodeOrError"]["staleCauses"]
    assert {c["reason"] for c in causes} == {"has a new code version"}
    _open_partition(live, page, "report_manifest")
    expect(page.get_by_text(re.compile(r"^Unsynced")).first).to_be_visible()
    shot("upgrade_marks_the_month_unsynced")
    run_id = _materialize_in_the_ui(live, page, shot, "reextraction")
    assert live.status(run_id) == "SUCCESS"
    _, now = latest_archived(store, MONTH)
    assert now.extractor_version == NEXT and now.source_hash == corrected.source_hash
    assert now.deadlines.archive_delete_by == first.deadlines.archive_delete_by
    complete = [m for _, m in month_manifests(store, MONTH) if m.state == "complete"]
    assert complete == [now]
    assert [h.cause for h in month_record.history(store, MONTH)][-1] == "reextraction"
    assert not live.graphql(STALE, {"p": MONTH})["assetNodeOrError"]["staleCauses"]
    _open_partition(live, page, "report_manifest")
    expect(page.get_by_text(now.parent_revision).first).to_be_visible()
    shot("reextracted_one_revision")


def _materialize_in_the_ui(live: LiveDagster, page: Page, shot, name: str) -> str:
    """Assets → report_manifest → Materialize → 2026-10 → Launch: the run's id, once ended."""
    page.goto(f"{live.url}/assets/report_manifest")
    _skip_community_popup(page)
    page.get_by_role("button", name=re.compile(r"Materialize…$")).click()
    dialog = page.get_by_role("dialog")
    partitions = dialog.get_by_placeholder(re.compile(r"^ex: "))
    partitions.fill(MONTH)
    partitions.press("Enter")
    launch = dialog.get_by_role("button", name="Launch 1 run", exact=True)
    expect(launch).to_be_enabled()
    shot(f"{name}_dialog")
    launch.click()
    notifications = page.get_by_role("region", name=re.compile(r"^Notifications"))
    toast = notifications.get_by_role("listitem").filter(has_text="Launched run ")
    toast.get_by_role("link", name="View", exact=True).click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}"))
    run_id = page.url.split("/runs/")[1].split("?")[0]
    status = page.get_by_text(re.compile(r"^(Success|Failure|Canceled)$"))
    expect(status).to_be_visible(timeout=180_000)
    shot(f"{name}_run")
    return run_id


def _open_partition(live: LiveDagster, page: Page, asset: str) -> None:
    page.goto(f"{live.url}/assets/{asset}?view=partitions&partition={MONTH}")
    _skip_community_popup(page)
    expect(page.get_by_text(MONTH, exact=True).first).to_be_visible()


def _skip_community_popup(page: Page) -> None:
    try:
        page.get_by_role("button", name="Skip", exact=True).click(timeout=3_000)
    except PlaywrightTimeout:  # the pop-up shows on a fresh instance's first visit only
        return


def _latest(live: LiveDagster, key: dg.AssetKey) -> dict:
    """The metadata of the month's latest materialization of `key` ({} when there is none)."""
    with dg.DagsterInstance.from_config(str(live.home)) as instance:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[MONTH]), limit=1
        ).records
    if not records:
        return {}
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def _runs(live: LiveDagster) -> int:
    return len(live.runs({"dagster/partition": MONTH}))


def _succeeded(live: LiveDagster, count: int) -> bool:
    runs = live.runs({"dagster/partition": MONTH})
    assert all(r["status"] not in ("FAILURE", "CANCELED") for r in runs), runs
    return len([r for r in runs if r["status"] == "SUCCESS"]) >= count


def _cli(live: LiveDagster, *args: str) -> str:
    done = subprocess.run(
        [str(BIN / "report-pipeline"), *args], env={**os.environ, **live.env},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def root_inbox(live: LiveDagster) -> Path:
    return live.root / "inbox" / MONTH


def _parse(text: str):
    from report_pipeline.core.model.clock import parse_iso

    return parse_iso(text)

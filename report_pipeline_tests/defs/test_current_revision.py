"""Every Dagster surface shows the month's current revision: after a decision from the shell
(current_revision_sensor), after a Launchpad decision (quarantine_review_job), and after a
re-extraction by a newer extractor (the asset's code_version)."""

from __future__ import annotations

import dagster as dg
import pytest

from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.model import current as month_record
from report_pipeline.core.model.settings import EXTRACTOR_VERSION
from report_pipeline.core.review.decide import decide
from report_pipeline.core.review.queue import pending
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.extractor import extractor_version
from report_pipeline.defs.deployment.resources import PipelineSettingsResource
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.current_revision import current_revision_sensor, shown_revision
from report_pipeline.defs.reports.manifest_table import manifest_table
from report_pipeline_tests.defs.test_month_checks import ui_materialize

pytestmark = pytest.mark.slow

MONTH = "2026-10"


def latest(instance, asset) -> dict:
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset.key, asset_partitions=[MONTH]), limit=1
    ).records
    event = record.asset_materialization
    return {"tags": event.tags or {}, **{k: v.value for k, v in event.metadata.items()}}


def tick(instance, resources, cursor=None) -> dg.SensorResult:
    with dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={**resources, "clock": ClockResource()}
    ) as context:
        return current_revision_sensor(context)


def test_a_decision_from_the_shell_reaches_both_assets_latest_materializations(
    inbox, instance, resources, tmp_path, clock, small_report
):
    inbox(small_report)
    assert ui_materialize(instance, resources).success
    store = LocalStore(tmp_path / "store")
    first = tick(instance, resources)
    assert not first.asset_events  # the run's materialization already shows the month
    item = pending(store, [MONTH])[0]
    done = decide(store, MONTH, item.sequence, "reject", "josé", "cut off", clock.now)
    result = tick(instance, resources, first.cursor)
    kinds = {type(e).__name__ for e in result.asset_events}
    assert kinds == {"AssetMaterialization", "AssetCheckEvaluation"}
    for event in result.asset_events:
        instance.report_runless_asset_event(event)  # what the daemon does with them
    shown, table = latest(instance, report_manifest), latest(instance, manifest_table)
    assert shown["revision"] == table["revision"] == done.revision
    assert shown["quarantined"] == 2
    assert shown["tags"]["dagster/code_version"] == EXTRACTOR_VERSION
    decided = [r.data for r in table["images"].records if r.data["sequence"] == item.sequence]
    assert decided[0]["review"] == "rejected"
    for key in (shown["manifest_key"], table["table_key"]):  # no metadata names a deleted key
        assert store.exists(key), key
    assert shown_revision(instance, MONTH) == done.revision
    assert not tick(instance, resources, result.cursor).asset_events  # nothing changed since


def test_a_launchpad_decision_materializes_the_new_revision_not_an_observation(
    inbox, instance, resources, tmp_path, small_report
):
    from report_pipeline_tests.defs.test_review_job import review

    inbox(small_report)
    assert ui_materialize(instance, resources).success
    store = LocalStore(tmp_path / "store")
    item = pending(store, [MONTH])[0]
    assert review(instance, resources, month=MONTH, sequence=item.sequence, decision="reject",
                  reviewer="ops.kim").success  # fmt: skip
    _, manifest = latest_archived(store, MONTH)
    shown = latest(instance, report_manifest)
    assert shown["revision"] == manifest.parent_revision != item.revision
    assert store.exists(shown["manifest_key"]) and shown["report_file"] == "small_report.pdf"
    assert latest(instance, manifest_table)["revision"] == manifest.parent_revision


def test_a_newer_extractor_re_extracts_into_one_current_revision_with_the_same_deadline(
    inbox, instance, resources, tmp_path
):
    inbox("truncated_jpeg.pdf")
    assert ui_materialize(instance, resources).success
    assert report_manifest.code_versions_by_key[report_manifest.key] == extractor_version()
    before = latest(instance, report_manifest)
    assert before["extractor_version"] == EXTRACTOR_VERSION
    assert before["tags"]["dagster/code_version"] == EXTRACTOR_VERSION
    upgrade = str(int(EXTRACTOR_VERSION) + 1)
    upgraded = PipelineSettingsResource(work_root=str(tmp_path / "work"), extractor_version=upgrade)
    assert ui_materialize(instance, resources, settings=upgraded).success
    after = latest(instance, report_manifest)
    assert after["extractor_version"] == upgrade and after["revision"] != before["revision"]
    assert after["archive_delete_by"] == before["archive_delete_by"]
    store = LocalStore(tmp_path / "store")
    assert [h.cause for h in month_record.history(store, MONTH)] == ["archived", "reextraction"]
    assert latest_archived(store, MONTH)[1].parent_revision == after["revision"]

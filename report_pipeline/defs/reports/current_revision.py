"""The UI follows the month's current revision, wherever it changed.

A run of `report_manifest` materializes the revision it published. A month also changes outside
such runs: a review decision from the shell, or from `quarantine_review_job`. For those, the
month's materializations of `report_manifest` and `manifest_table` are recorded without a run
(the same metadata a run records, tagged with the revision's extractor as its code version),
with the month's checks on the new revision. `current_revision_sensor` does it for every month
whose current revision (core/model/current.py) is not the one its latest materialization shows,
so the UI follows within a minute of any change, and no metadata is left pointing at the
objects of a revision that was superseded.
"""

from __future__ import annotations

import json
from datetime import datetime

import dagster as dg

from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.checks import month_checks
from report_pipeline.core.model import current as month_record
from report_pipeline.core.model.keys import manifest_table_key
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import StoreResource
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.claiming import unfinished_runs
from report_pipeline.defs.reports.manifest_table import manifest_table, table_metadata
from report_pipeline.defs.reports.metadata import manifest_metadata
from report_pipeline.defs.reports.month_checks import check_evaluation

CODE_VERSION_TAG = "dagster/code_version"  # what Dagster compares with the asset's code_version


def month_events(
    store: Store, manifest: Manifest, key: str, limits: month_checks.Thresholds, now: datetime,
    why: str,
) -> list:  # fmt: skip
    """The month's materializations of both assets for `manifest` (its current revision), and
    its checks evaluated on it."""
    month, revision = manifest.month, manifest.parent_revision
    tags = {CODE_VERSION_TAG: manifest.extractor_version}
    table_key = manifest_table_key(manifest.report_id, revision)
    events: list = [
        dg.AssetMaterialization(
            asset_key=report_manifest.key, partition=month, tags=tags,
            metadata=manifest_metadata(manifest, key, True),
            description=f"revision {revision} is the month's now: {why}",
        ),
        dg.AssetMaterialization(
            asset_key=manifest_table.key, partition=month,
            metadata=table_metadata(manifest, table_key, False),
            description=f"revision {revision}: {why}",
        ),
    ]  # fmt: skip
    outcomes = month_checks.month_outcomes(store, manifest, limits, now)
    return events + [check_evaluation(outcome, month) for outcome in outcomes]


def shown_revision(instance: dg.DagsterInstance, month: str) -> str:
    """The revision the month's latest materialization of report_manifest names ("": none)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=report_manifest.key, asset_partitions=[month]), limit=1
    ).records
    if not records:
        return ""
    revision = records[0].asset_materialization.metadata.get("revision")
    return str(revision.value) if revision is not None else ""


@dg.sensor(
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Records report_manifest's and manifest_table's materialization (and the month's "
    "checks) for every month whose current revision changed outside a run of it: a review "
    "decision from the shell or the Launchpad. Starts no runs.",
)
def current_revision_sensor(
    context: dg.SensorEvaluationContext, store: StoreResource, checks: CheckSettingsResource,
    clock: ClockResource,
) -> dg.SensorResult:  # fmt: skip
    backend, limits, now = store.get_store(), checks.thresholds(), clock.now()
    shown: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    events, notes = [], []
    for month, head in month_record.heads(backend).items():
        if shown.get(month) == head.revision or not monthly_partitions.has_partition_key(month):
            continue
        if unfinished_runs(context.instance, month, limit=1):
            notes.append(f"{month}: a run is in progress; looking again next tick")
            continue  # the run records what it publishes
        if shown_revision(context.instance, month) != head.revision:
            found = latest_archived(backend, month)
            if found is not None and found[1].parent_revision == head.revision:
                why = f"{head.cause} at {head.at}"
                events += month_events(backend, found[1], found[0], limits, now, why)
                notes.append(f"{month}: revision {head.revision} ({head.cause})")
        shown[month] = head.revision
    cursor = json.dumps(shown, sort_keys=True)
    if not events:
        reason = "; ".join(notes) or "every month's materialization shows its current revision"
        return dg.SensorResult(skip_reason=reason, cursor=cursor)
    context.log.info("; ".join(notes))
    return dg.SensorResult(asset_events=events, cursor=cursor)

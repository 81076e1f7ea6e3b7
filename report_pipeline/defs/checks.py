"""Retention checks on `report_manifest`: they read the store, never the asset's data."""

import dagster as dg

from report_pipeline.core import retention_audit
from report_pipeline.defs.clock import ClockResource
from report_pipeline.defs.resources import StoreResource, WorkerResource

DESCRIPTIONS = {
    "work_material_deleted_by_deadline":
        "Bytes of working material (staged sources, work objects, workdirs) kept past the short "
        "clock must be zero.",
    "archive_within_retention": "Nothing archived is kept past the long clock.",
    "manifest_complete": "archived + quarantined equals expected for every revision.",
    "archive_matches_manifest":
        "Every object a manifest lists exists with its hash, and no object is unlisted.",
}  # fmt: skip


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(name, asset="report_manifest", description=text)
        for name, text in DESCRIPTIONS.items()
    ],
    can_subset=True,
)
def retention_checks(
    context: dg.AssetCheckExecutionContext,
    store: StoreResource,
    settings: WorkerResource,
    clock: ClockResource,
):
    """One pass over the store for all four retention checks (counts, bytes, oldest overdue
    item and cleanup lag p50/p95 in each check's metadata). Run with a partition's
    materialization, the per-revision checks cover that month; the daily audit covers all."""
    worker = settings.settings()
    wanted = {key.name for key in context.selected_asset_check_keys}
    month = context.run.tags.get("dagster/partition")
    outcomes = retention_audit.audit_all(
        store.get_store(), worker.work_root, clock.now(), worker.retention, month=month
    )
    for outcome in outcomes:
        if outcome.name in wanted:
            yield dg.AssetCheckResult(
                check_name=outcome.name,
                asset_key="report_manifest",
                passed=outcome.passed,
                severity=dg.AssetCheckSeverity.ERROR,
                description=outcome.description,
                metadata=outcome.metadata,
            )

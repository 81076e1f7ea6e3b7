"""Whole-archive retention checks on `image_archive`: they read the store (and the workers'
disk), never an asset's data, and no month's run ever selects them."""

import dagster as dg

from report_pipeline.core.checks import retention_audit
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.resources import PipelineSettingsResource, StoreResource

DESCRIPTIONS = {
    "work_material_deleted_by_deadline":
        "Bytes of working material (staged sources, work objects, workdirs) kept past the short "
        "clock must be zero, whether a deadline marker leads to it or only a listing of staged/ "
        "and work/ finds it.",
    "archive_within_retention": "Nothing archived is kept past the long clock.",
}  # fmt: skip


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(name, asset="image_archive", description=text)
        for name, text in DESCRIPTIONS.items()
    ],
    can_subset=True,
)
def archive_retention_checks(
    context: dg.AssetCheckExecutionContext,
    store: StoreResource,
    settings: PipelineSettingsResource,
    clock: ClockResource,
):
    """One pass over what is due for both whole-archive checks: overdue items and bytes, the
    oldest overdue item and deadline, and the cleanup lag p50/p95 (seconds) from the audit
    stream over the last 30 days, in each check's metadata."""
    worker = settings.settings()
    wanted = {key.name for key in context.selected_asset_check_keys}
    outcomes = retention_audit.audit_archive(
        store.get_store(), worker.work_root, clock.now(), worker.retention
    )
    for outcome in outcomes:
        if outcome.name in wanted:
            yield dg.AssetCheckResult(
                check_name=outcome.name,
                asset_key="image_archive",
                passed=outcome.passed,
                severity=dg.AssetCheckSeverity.ERROR,
                description=outcome.description,
                metadata=outcome.metadata,
            )

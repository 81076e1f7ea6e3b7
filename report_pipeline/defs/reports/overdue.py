"""`overdue_report_sensor`: a month whose report is not archived by day N of the next month
gets a WARN on that month's `report_archived_on_time` check, before anyone has to backfill to
find out. Dagster's freshness checks (`build_last_update_freshness_checks`) judge only the
latest time window of a partitioned asset and record an unpartitioned result, so they cannot
say *which* month is missing; this sensor records one partition-scoped evaluation per month.
"""

from __future__ import annotations

import json

import dagster as dg

from report_pipeline.core.checks import month_checks
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import StoreResource
from report_pipeline.defs.reports.claiming import unfinished_runs
from report_pipeline.defs.reports.month_checks import check_evaluation

INTERVAL_SECONDS = 3600


def _settled(cursor: str | None) -> set[str]:
    return set(json.loads(cursor)["settled"]) if cursor else set()


def _in_flight(instance: dg.DagsterInstance, month: str) -> bool:
    """A run of the month is queued or running: look again on the next tick."""
    return bool(unfinished_runs(instance, month, limit=1))


@dg.sensor(
    minimum_interval_seconds=INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Hourly: WARN on report_archived_on_time for every month past its due day "
    "(checks.due_day of the next month) with no archived report. Starts no runs.",
)
def overdue_report_sensor(
    context: dg.SensorEvaluationContext,
    store: StoreResource,
    checks: CheckSettingsResource,
    clock: ClockResource,
):
    """Each month is looked at until it is archived or flagged once (the cursor remembers it);
    an archived month's check is then up to date from its own run."""
    now, limits, backend = clock.now(), checks.thresholds(), store.get_store()
    settled = _settled(context.cursor)
    months = monthly_partitions.get_partition_keys(current_time=now)
    due = month_checks.due_months(months, now, limits.due_day)
    events, overdue = [], []
    for month in (m for m in due if m not in settled):
        if _in_flight(context.instance, month):
            continue  # its run records the month's result; a WARN now would outlive it in the UI
        settled.add(month)
        if month_checks.is_archived(backend, month):
            continue
        overdue.append(month)
        events.append(
            check_evaluation(month_checks.archived_on_time(month, None, now, limits), month)
        )
    cursor = json.dumps({"settled": sorted(settled)})
    if not events:
        return dg.SensorResult(skip_reason="no month newly overdue", cursor=cursor)
    context.log.warning(f"overdue reports: {', '.join(overdue)}")
    return dg.SensorResult(asset_events=events, cursor=cursor)

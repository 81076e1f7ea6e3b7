"""A month launched (from the UI, a backfill) with no report in its inbox is not a failure: the
run succeeds without materializing `report_manifest`, says why on the month's partition, and
gives the month's `report_archived_on_time` its true state (WARN "overdue" once it is due). The
month stays Missing, so the next "Failed and missing" backfill launches it again. Intake's run
of a report that a later arrival superseded ends the same way (`record_not_latest`)."""

from __future__ import annotations

import dagster as dg

from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.checks import month_checks
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.reports.month_checks import ASSET, check_evaluation


def record_no_report(
    context: dg.OpExecutionContext, store: Store, limits: month_checks.Thresholds, why: str
) -> None:
    """Log and record `why` (the refusal's message) on the month's partition, and evaluate
    every per-month check: on the month's archived revision if it has one (its report has left
    the inbox since), else as a month without a report (`month_checks.without_report`), so none
    is left "Skipped" or "Execution failed"."""
    month = context.partition_key
    context.log.warning(
        f"{why}: nothing to archive, and report_manifest stays missing for {month}. Put the "
        "report in the inbox's month folder (or `report-pipeline submit` it), then launch again."
    )
    context.log_event(
        dg.AssetObservation(
            asset_key=ASSET,
            partition=month,
            description=f"no report: {why}",
            metadata={"no_report": why},
        )  # fmt: skip
    )
    evaluate_month_checks(context, store, limits)


def record_not_latest(
    context: dg.OpExecutionContext, store: Store, limits: month_checks.Thresholds, why: str
) -> None:
    """Intake's run of a report that is no longer the month's (a later arrival superseded it,
    core/intake/arrivals.py): as for a month without a report, nothing is materialized, `why`
    is logged and observed on the partition, and the checks judge the month's archive."""
    context.log.warning(f"{why}. The run of the month's report materializes it.")
    context.log_event(
        dg.AssetObservation(
            asset_key=ASSET,
            partition=context.partition_key,
            description=f"not the month's report: {why}",
            metadata={"not_the_months_report": why},
        )  # fmt: skip
    )
    evaluate_month_checks(context, store, limits)


def evaluate_month_checks(
    context: dg.OpExecutionContext, store: Store, limits: month_checks.Thresholds
) -> None:
    """Every per-month check, on the month's archived revision if it has one, else as a month
    without a report, so none is left "Skipped" or "Execution failed"."""
    month = context.partition_key
    archived = latest_archived(store, month)
    if archived is not None:
        outcomes = month_checks.month_outcomes(store, archived[1], limits, utc_now())
    else:
        outcomes = month_checks.without_report(month, utc_now(), limits)
    for outcome in outcomes:
        context.log_event(check_evaluation(outcome, month))

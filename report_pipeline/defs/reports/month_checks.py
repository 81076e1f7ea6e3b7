"""Per-month checks on `report_manifest`: declared on the graph asset, evaluated by
`publish_manifest` on the revision it just published, recorded on that month's partition.

Partition-scoped check specs (`partitions_def=`) are a Dagster 1.13 preview: with them each
evaluation is stored with `partition=<month>` and the UI shows the check's status per month.
Every result also carries `month` and `revision` in its metadata.
"""

import warnings
from collections.abc import Iterator
from datetime import datetime

import dagster as dg

from report_pipeline.core.checks import month_checks
from report_pipeline.core.checks.month_checks import Thresholds
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.deployment.partitions import monthly_partitions

ASSET = "report_manifest"
ERROR, WARN = dg.AssetCheckSeverity.ERROR, dg.AssetCheckSeverity.WARN

# name: (severity, blocking, description). A failing blocking check stops `manifest_table`.
CHECKS = {
    "manifest_complete": (ERROR, True,
        "archived + quarantined equals expected for the month's revision, every page has a row."),
    "archive_matches_manifest": (ERROR, True,
        "Every object the month's manifest lists exists with its bytes; no unlisted object. "
        "On S3: the listing's ETag and size against the MD5 (checked by S3 at upload) and size "
        "recorded in the manifest; locally, and whenever they disagree: the bytes re-read and "
        "their sha256. Metadata `compared` says how many objects went each way."),
    "first_attempt_validation": (WARN, False,
        "Share of image occurrences whose outcome (archived or quarantined) came on the first "
        "attempt, WARN below checks.min_first_attempt_pct (default 99%): retries and "
        "redeliveries, never bad input."),
    "quarantine_rate": (WARN, False,
        "Share of image occurrences quarantined, WARN above checks.max_quarantine_pct "
        "(default 1%): bad input in the report, which no retry changes."),
    "queue_age_p95": (WARN, False,
        "p95 age of a queued child task when its work started, WARN above "
        "checks.max_queue_age_p95_seconds (default 600 s)."),
    "report_archived_on_time": (WARN, False,
        "The month's report was archived by the end of day checks.due_day (default 5) of the "
        "next month. WARN when it was archived late, or is overdue and not archived "
        "(overdue_report_sensor, or a run that found no report)."),
    "quarantine_reviewed": (WARN, False,
        "Every quarantined image of the month has a reviewer's decision (report-pipeline "
        "quarantine, or quarantine_review_job), or has waited no longer than checks.review_days "
        "(default 30). Re-evaluated daily by quarantine_review_sensor and after each decision."),
    "pages_drawn_whole": (WARN, False,
        "Every page of the month was drawn whole, or a reviewer accepted it as it is. WARN names "
        "each damaged page (a content stream broke off, or nested too deep to follow: what it "
        "would have drawn after the break is unknown; the page is accounted for by its own row, "
        "so manifest_complete passes): undecided, or rejected with the reviewer's note "
        "(report-pipeline quarantine decide --page)."),
}  # fmt: skip
OVERDUE_CHECK = "report_archived_on_time"

with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.PreviewWarning)  # partition-scoped checks: documented above
    MONTH_CHECK_SPECS = [
        dg.AssetCheckSpec(
            name,
            asset=ASSET,
            description=text,
            blocking=blocking,
            partitions_def=monthly_partitions,
        )  # fmt: skip
        for name, (_severity, blocking, text) in CHECKS.items()
    ]


def check_result(outcome: month_checks.CheckOutcome) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        asset_key=ASSET, check_name=outcome.name, passed=outcome.passed,
        severity=CHECKS[outcome.name][0], description=outcome.description,
        metadata=outcome.metadata,
    )  # fmt: skip


def check_evaluation(outcome: month_checks.CheckOutcome, month: str) -> dg.AssetCheckEvaluation:
    """The outcome as an evaluation recorded on `month`'s partition from outside the month's
    publish step (a sensor tick, a run that found no report)."""
    result = check_result(outcome)
    return dg.AssetCheckEvaluation(
        asset_key=result.asset_key, check_name=outcome.name, passed=outcome.passed,
        severity=result.severity, description=outcome.description, metadata=result.metadata,
        partition=month,
    )  # fmt: skip


def month_check_results(
    store: Store, manifest: Manifest, limits: Thresholds, now: datetime
) -> Iterator[dg.AssetCheckResult]:
    """Every per-month check on the revision's manifest (figures of that revision only)."""
    for outcome in month_checks.month_outcomes(store, manifest, limits, now):
        yield check_result(outcome)

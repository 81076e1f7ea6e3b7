"""Thresholds of the per-month checks (validation on the first attempt, queue age, the
quarantine rate, the report's due day and the quarantine review's deadline)."""

import dagster as dg
from pydantic import Field

from report_pipeline.core.checks.month_checks import Thresholds


class CheckSettingsResource(dg.ConfigurableResource):
    """Deployment-wide thresholds for the per-month checks on `report_manifest`. Every field has
    a default; set them in `definitions.py` or per run in the launchpad (resources.checks)."""

    min_first_attempt_pct: float = Field(
        Thresholds.min_first_attempt_pct,
        description="first_attempt_validation warns below this share of images (%)",
    )
    max_quarantine_pct: float = Field(
        Thresholds.max_quarantine_pct,
        description="quarantine_rate warns above this share of images quarantined (%)",
    )
    max_queue_age_p95_seconds: float = Field(
        Thresholds.max_queue_age_p95_seconds,
        description="queue_age_p95 warns above this p95 queued child age (seconds)",
    )
    due_day: int = Field(
        Thresholds.due_day,
        description="a month's report is overdue after this day of the next month (UTC)",
    )

    review_days: int = Field(
        Thresholds.review_days,
        description="quarantine_reviewed warns when a quarantined image is undecided this long",
    )

    def thresholds(self) -> Thresholds:
        return Thresholds(
            min_first_attempt_pct=self.min_first_attempt_pct,
            max_quarantine_pct=self.max_quarantine_pct,
            max_queue_age_p95_seconds=self.max_queue_age_p95_seconds,
            due_day=self.due_day,
            review_days=self.review_days,
        )

"""Thresholds of the per-month checks (validation on the first attempt, queue age, the
quarantine rate and the report's due day)."""

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

    def thresholds(self) -> Thresholds:
        return Thresholds(
            min_first_attempt_pct=self.min_first_attempt_pct,
            max_quarantine_pct=self.max_quarantine_pct,
            max_queue_age_p95_seconds=self.max_queue_age_p95_seconds,
            due_day=self.due_day,
        )

"""The monthly partitions: one per report month, keys "2026-10" matching the inbox's folders.

The first month is the one setting read when the definitions module loads, because Dagster needs
partition keys at definitions load time (resources exist only inside runs and sensor ticks):
`REPORT_PIPELINE_FIRST_MONTH` (YYYY-MM), default `DEFAULT_FIRST_MONTH`. It bounds what a
"Failed and missing" backfill launches (one run per month from it on) and which months
`overdue_report_sensor` may flag. Change it and restart the code location.
"""

import os

import dagster as dg

DEFAULT_FIRST_MONTH = "2025-01"  # ~2 years back: recent enough that a backfill stays small
FIRST_MONTH_ENV = "REPORT_PIPELINE_FIRST_MONTH"


def first_month() -> str:
    return os.environ.get(FIRST_MONTH_ENV) or DEFAULT_FIRST_MONTH


monthly_partitions = dg.MonthlyPartitionsDefinition(start_date=first_month(), fmt="%Y-%m")

"""The one place the Dagster definitions are assembled."""

import dagster as dg

from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.checks import retention_checks
from report_pipeline.defs.cleanup import cleanup_job
from report_pipeline.defs.clock import ClockResource
from report_pipeline.defs.jobs import extract_report_job, retention_audit_job
from report_pipeline.defs.resources import InboxResource, StoreResource, WorkerResource
from report_pipeline.defs.schedules import cleanup_schedule, retention_audit_schedule
from report_pipeline.defs.sensors import new_report_sensor
from report_pipeline.defs.stale_runs import dead_run_sensor

defs = dg.Definitions(
    assets=[report_manifest],
    asset_checks=[retention_checks],
    jobs=[extract_report_job, cleanup_job, retention_audit_job],
    schedules=[cleanup_schedule, retention_audit_schedule],
    sensors=[new_report_sensor, dead_run_sensor],
    resources={
        "inbox": InboxResource(),
        "store": StoreResource(),
        "settings": WorkerResource(),
        "clock": ClockResource(),
    },
    executor=dg.in_process_executor,
)

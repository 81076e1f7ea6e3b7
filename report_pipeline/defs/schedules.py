import dagster as dg

from report_pipeline.defs.cleanup import cleanup_job
from report_pipeline.defs.jobs import retention_audit_job

cleanup_schedule = dg.ScheduleDefinition(
    name="cleanup_schedule",
    job=cleanup_job,
    cron_schedule="*/5 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="The janitor every 5 minutes: the short clock is minutes, not hours.",
)

retention_audit_schedule = dg.ScheduleDefinition(
    name="retention_audit_schedule",
    job=retention_audit_job,
    cron_schedule="15 5 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="The four retention checks on report_manifest, daily at 05:15 UTC.",
)

import dagster as dg

from report_pipeline.defs.retention.jobs import cleanup_job, retention_audit_job

cleanup_schedule = dg.ScheduleDefinition(
    name="cleanup_schedule",
    job=cleanup_job,
    cron_schedule="*/5 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="The janitor (a materialization of image_archive) every 5 minutes: the short "
    "clock is minutes, not hours.",
)

retention_audit_schedule = dg.ScheduleDefinition(
    name="retention_audit_schedule",
    job=retention_audit_job,
    cron_schedule="15 5 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="The whole-archive retention checks on image_archive, daily at 05:15 UTC.",
)

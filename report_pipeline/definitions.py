"""The one place the Dagster definitions are assembled, and the one place the executor is set
(every job inherits it). Resources and executor depend on the deployment
(`REPORT_PIPELINE_DEPLOYMENT`, `REPORT_PIPELINE_EXECUTOR`, read here once at load: see
defs/deployment/deployment.py)."""

import gc

# Frozen first, what this process loaded before the definitions (in a run worker: Dagster and the
# instance it opened; elsewhere little): the collector's passes while the definitions load then
# walk only what they make. A full pass over Dagster's objects fell inside this import in every
# run worker (~0.1 s of CPU); frozen, it does not happen (bench/HISTORY.md, "A run worker's own
# cost"). The imports below come after it on purpose (E402 is off for this file).
gc.freeze()

import dagster as dg

from report_pipeline.defs.deployment.deployment import (
    deployment,
    executor_for,
    executor_name,
    resources_for,
)
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.current_revision import current_revision_sensor
from report_pipeline.defs.reports.dead_runs import dead_run_sensor
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import manifest_table, manifest_table_sensor
from report_pipeline.defs.reports.overdue import overdue_report_sensor
from report_pipeline.defs.reports.review import quarantine_review_job, quarantine_review_sensor
from report_pipeline.defs.reports.sensors import new_report_sensor
from report_pipeline.defs.retention.checks import archive_retention_checks
from report_pipeline.defs.retention.image_archive import image_archive
from report_pipeline.defs.retention.jobs import cleanup_job, retention_audit_job
from report_pipeline.defs.retention.schedules import cleanup_schedule, retention_audit_schedule


def build_defs(deployment_name: str) -> dg.Definitions:
    """The same assets, checks, jobs, schedules and sensors everywhere; the deployment's
    resources and executor (which also sizes the tasks)."""
    executor = executor_name(deployment_name)
    return dg.Definitions(
        assets=[report_manifest, manifest_table, image_archive],
        asset_checks=[archive_retention_checks],
        jobs=[extract_report_job, cleanup_job, retention_audit_job, quarantine_review_job],
        schedules=[cleanup_schedule, retention_audit_schedule],
        sensors=[
            new_report_sensor,
            overdue_report_sensor,
            dead_run_sensor,
            manifest_table_sensor,
            quarantine_review_sensor,
            current_revision_sensor,
        ],  # fmt: skip
        resources=resources_for(deployment_name, executor),
        executor=executor_for(executor),
    )


defs = build_defs(deployment())

# What the definitions loaded stays until the process exits: frozen, the collector's full passes
# skip it, and forked decoder children inherit that (the saving: bench/HISTORY.md, bench.cold).
gc.freeze()

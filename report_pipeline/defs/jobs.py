import dagster as dg

from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.checks import retention_checks

# In-process: a step costs ~0.04 s here (bench/README.md), not seconds for a process per step.
# Partitions run concurrently through the run queue (dagster_home/dagster.yaml). The retention
# checks audit the whole store, so they run on their own schedule, not with every partition.
# Crash recovery (dagster_home/dagster.yaml sets the same defaults for UI launches): a run whose
# worker died is retried from failure; no run may outlive the work lease (60 min), after which
# the janitor may delete its workdirs.
RECOVERY_TAGS = {"dagster/retry_strategy": "FROM_FAILURE", "dagster/max_runtime": "3600"}

extract_report_job = dg.define_asset_job(
    "extract_report_job",
    selection=dg.AssetSelection.assets(report_manifest).without_checks(),
    executor_def=dg.in_process_executor,
    tags=RECOVERY_TAGS,
)

retention_audit_job = dg.define_asset_job(
    "retention_audit_job",
    selection=dg.AssetSelection.checks(retention_checks),
    executor_def=dg.in_process_executor,
    description="Run the four retention checks on report_manifest (materializes nothing).",
)

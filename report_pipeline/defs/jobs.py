import dagster as dg

from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.checks import retention_checks

# In-process: a step costs ~0.04 s here (bench/README.md), not seconds for a process per step.
# Partitions run concurrently through the run queue (dagster_home/dagster.yaml). The retention
# checks audit the whole store, so they run on their own schedule, not with every partition.
extract_report_job = dg.define_asset_job(
    "extract_report_job",
    selection=dg.AssetSelection.assets(report_manifest).without_checks(),
    executor_def=dg.in_process_executor,
)

retention_audit_job = dg.define_asset_job(
    "retention_audit_job",
    selection=dg.AssetSelection.checks(retention_checks),
    executor_def=dg.in_process_executor,
    description="Run the four retention checks on report_manifest (materializes nothing).",
    tags={"report_pipeline/kind": "retention"},  # a maintenance slot (dagster_home/dagster.yaml)
)

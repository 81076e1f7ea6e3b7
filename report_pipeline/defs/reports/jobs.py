import dagster as dg

from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.manifest_table import manifest_table

# Every job runs on the Definitions' executor (defs/deployment/deployment.py: EXECUTOR,
# in-process). Partitions run concurrently through the run queue (dagster_home/dagster.yaml). A
# month's run builds the month's assets and evaluates its per-month checks (declared on
# report_manifest); the whole-archive checks belong to image_archive and are never part of it
# (defs/retention/jobs.py).
# Crash recovery (dagster_home/dagster.yaml sets the same defaults for UI launches): a run whose
# worker died is retried from failure; no run may outlive the work lease (60 min), after which
# the janitor may delete its workdirs.
RECOVERY_TAGS = {"dagster/retry_strategy": "FROM_FAILURE", "dagster/max_runtime": "3600"}

extract_report_job = dg.define_asset_job(
    "extract_report_job",
    selection=dg.AssetSelection.assets(report_manifest, manifest_table),
    tags=RECOVERY_TAGS,
    description="One month: its report_manifest partition (with its checks) and manifest_table.",
)

import dagster as dg

from report_pipeline.defs.retention.checks import archive_retention_checks
from report_pipeline.defs.retention.image_archive import image_archive

# Every janitor pass (cleanup_job) evaluates the whole-archive checks on what it left, and
# retention_audit_job alone audits without deleting. Both run on the Definitions' executor.

cleanup_job = dg.define_asset_job(
    "cleanup_job",
    selection=dg.AssetSelection.assets(image_archive),  # with its checks: audited every pass
    tags={"report_pipeline/kind": "retention"},
    description="The janitor: one materialization of image_archive (both clocks enforced), then "
    "its whole-archive retention checks on what the pass left.",
)

retention_audit_job = dg.define_asset_job(
    "retention_audit_job",
    selection=dg.AssetSelection.checks(archive_retention_checks),
    description="The whole-archive retention checks on image_archive (materializes nothing).",
    tags={"report_pipeline/kind": "retention"},  # a maintenance slot (dagster_home/dagster.yaml)
)

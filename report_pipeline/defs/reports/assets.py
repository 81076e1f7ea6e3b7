import dagster as dg

from report_pipeline.defs.deployment.extractor import extractor_version
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.reports.guard import retry_after_instance_outage
from report_pipeline.defs.reports.month_checks import MONTH_CHECK_SPECS
from report_pipeline.defs.reports.ops import (
    archive_pages,
    extract_pages,
    publish_manifest,
    stage_report,
)


@dg.graph_asset(
    partitions_def=monthly_partitions,
    group_name="reports",
    kinds={"pdf", "png"},
    check_specs=MONTH_CHECK_SPECS,
    code_version=extractor_version(),  # months archived by an older extractor show as changed
)
def report_manifest():
    """The month's report as a private, validated image archive plus a manifest that accounts
    for every page and image occurrence (archived, or quarantined with a reason). The value is a
    small `PublishedManifest` (ids, state, counts); the manifest itself lives in the store at
    `manifest_key`. Its per-month checks (defs/reports/month_checks.py) are evaluated by
    `publish_manifest` on this revision. The month keeps one current revision: a corrected
    report or a newer extractor (the code version) replaces it; a review decision taken
    elsewhere shows here within a minute (current_revision_sensor)."""
    stage, extract, archive, publish = (
        op.with_hooks({retry_after_instance_outage})
        for op in (stage_report, extract_pages, archive_pages, publish_manifest)
    )  # a step failed by Dagster's database, not by us, is retried (defs/reports/guard.py)
    staged, tasks = stage()
    archived = tasks.map(lambda task: archive(staged, extract(task)))
    published, *results = publish(staged, archived.collect())
    names = [spec.get_python_identifier() for spec in MONTH_CHECK_SPECS]
    return {"result": published, **dict(zip(names, results, strict=True))}

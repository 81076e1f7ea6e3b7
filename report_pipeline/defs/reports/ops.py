"""The ops of `report_manifest`: adapters from Dagster to the core's steps. `stage_report` also
decides what a run does with its month (no report, a superseded report, reuse, a claim another
run holds), each ending as Dagster expects; the others call one core function each."""

import dagster as dg
from pydantic import Field

from report_pipeline.core.archive import archive as core_archive
from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.month_report import NotLatest, choose_for_run, opened_for_run
from report_pipeline.core.intake.submission import REVISION_TAG, check_open, revision_tags
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.keys import manifest_key
from report_pipeline.core.model.messages import (
    ArchivedTask,
    ExtractedTask,
    PageTask,
    PublishedManifest,
    StagedReport,
)
from report_pipeline.core.worker import completion, worker
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    StoreResource,
    WorkerResource,
)
from report_pipeline.defs.reports.claiming import claim_for_run
from report_pipeline.defs.reports.guard import STORAGE_RETRY, guarded, owner
from report_pipeline.defs.reports.metadata import (
    manifest_metadata,
    page_group_metadata,
    staged_metadata,
    task_metadata,
)
from report_pipeline.defs.reports.month_checks import MONTH_CHECK_SPECS, month_check_results
from report_pipeline.defs.reports.no_report import NO_REPORT, record_no_report, record_not_latest


class StageReportConfig(dg.Config):
    """Which report a run stages, and how its pages are grouped into steps. Left empty (UI
    launches, backfills): the month's report, the file whose content arrived last (docs/intake.md),
    grouped as the `settings` resource says. Intake (sensor, `submit`) fills source, report_key,
    source_hash; a run whose content a later arrival has superseded extracts nothing."""

    source: str = Field("", description="the source's name; empty: the primary inbox")
    report_key: str = Field("", description="opaque key of the file chosen at intake")
    source_hash: str = Field("", description="sha256 validated at intake; other bytes refused")
    pages_per_task: int = Field(
        0,
        ge=0,
        description="pages per page group (one extract_pages and one archive_pages step each). "
        "0: the settings resource's pages_per_task (by default, groups of ~8 s of estimated "
        "work); 1: one step per page, for per-page step visibility (costs ~0.04 s per step).",
    )


def stage_report_run_config(stage_config: dict) -> dict:
    """Run config that gives `stage_report` (inside the graph asset) its config."""
    return {"ops": {"report_manifest": {"ops": {"stage_report": {"config": stage_config}}}}}


@dg.op(
    # `staged` is absent when another run holds the revision's claim: nothing downstream runs.
    out={"staged": dg.Out(StagedReport, is_required=False), "tasks": dg.DynamicOut(PageTask)},
    retry_policy=STORAGE_RETRY,
)
def stage_report(
    context: dg.OpExecutionContext,
    config: StageReportConfig,
    inbox: InboxResource,
    store: StoreResource,
    settings: WorkerResource,
    checks: CheckSettingsResource,
):
    """Read the report chosen at intake (or the month's report: the file whose content arrived
    last), authorized again, stream it into the private store with a byte cap, check the %PDF
    signature, page count and encryption, compute the idempotency key, and fan out: one page
    group per step (mapping key page_0001 or pages_0001_0070), sized by `pages_per_task` (run
    config, else the settings resource). A month with no report in the inbox, and intake's run
    of a report a later arrival superseded, end here without failing (defs/reports/no_report.py).
    The step's metadata names the file used and the files it superseded."""
    month = context.partition_key
    pages_per_task = config.pages_per_task or settings.pages_per_task

    def work() -> tuple[StagedReport, list[PageTask]] | RefusedInput | NotLatest:
        check_open(month, monthly_partitions.has_partition_key)
        named, worker_settings = inbox.source(config.source), settings.settings()
        sources, backend, runner = inbox.report_sources(), store.get_store(), owner(context)
        try:
            chosen = choose_for_run(
                backend, sources, month, worker_settings, runner, named.name, config.report_key,
                config.source_hash,
            )  # fmt: skip
        except RefusedInput as refused:
            if refused.code == NO_REPORT:  # an ordinary month with nothing in it
                return refused
            raise
        if isinstance(chosen, NotLatest) or chosen.archived is not None:
            return chosen if isinstance(chosen, NotLatest) else (chosen.archived, [])
        with opened_for_run(sources, chosen, worker_settings, runner) as path:
            return worker.stage(
                backend, path, chosen.source, month, len(chosen.file.superseded),
                worker_settings, runner, pages_per_task, settings.target_task_units,
                expected_hash=chosen.sha256, source_file=chosen.file,
            )  # fmt: skip

    found = guarded(context, work)
    if isinstance(found, RefusedInput | NotLatest):
        why, thresholds = found.message, checks.thresholds()
        record = record_no_report if isinstance(found, RefusedInput) else record_not_latest
        guarded(context, lambda: record(context, store.get_store(), thresholds, why))
        return
    staged, tasks = found
    chosen_source = staged.source_file.source if staged.source_file else inbox.name
    tag_run_with_revision(context, staged, chosen_source)
    if not staged.reused:  # one run per revision extracts it (defs/reports/claiming.py)
        claim = guarded(context, lambda: claim_for_run(context, store.get_store(), staged))
        if not claim.won:
            context.log.warning(f"nothing extracted in this run: {claim.describe()}")
            return
    if staged.reused:
        context.log.info("revision already archived with a complete manifest: nothing to extract")
    meta = {**staged_metadata(staged), "page_groups": len(tasks), "pages_per_task": pages_per_task,
            "target_task_units": settings.target_task_units}  # fmt: skip
    yield dg.Output(staged, "staged", metadata=meta)
    for task in tasks:
        yield dg.DynamicOutput(task, mapping_key=task.task_key, output_name="tasks")


def tag_run_with_revision(context: dg.OpExecutionContext, staged: StagedReport, source: str):
    """A UI launch or backfill learns its revision only here. Tag the run as intake does, so
    `new_report_sensor` and `submit` find it as the revision's run and start no second one."""
    if REVISION_TAG in context.run.tags:  # intake's run: already tagged with this revision
        return
    ref = staged.ref
    tags = revision_tags(ref.revision, ref.report_id, ref.source_hash, source)
    context.instance.add_run_tags(context.run_id, tags)


@dg.op(retry_policy=STORAGE_RETRY)
def extract_pages(
    context: dg.OpExecutionContext, store: StoreResource, settings: WorkerResource, task: PageTask
) -> dg.Output[ExtractedTask]:
    """One page group (first_page..last_page): decode, validate and normalize every image its
    pages draw, in a private workdir. Bad bytes are quarantined on the spot (never retried);
    results go to the store."""
    attempt = context.retry_number + 1  # recorded in the manifest with archive_pages's
    extracted = guarded(
        context,
        lambda: worker.extract(
            store.get_store(), task, settings.settings(), owner(context), attempt
        ),
    )
    return dg.Output(
        extracted,
        metadata={
            **page_group_metadata(task),
            "validated": extracted.validated,
            "quarantined": extracted.quarantined,
            "peak_rss_mib": round(extracted.peak_rss_kib / 1024, 1),
        },
    )


@dg.op(retry_policy=STORAGE_RETRY)
def archive_pages(
    context: dg.OpExecutionContext, store: StoreResource, staged: StagedReport,
    extracted: ExtractedTask,
) -> dg.Output[ArchivedTask]:  # fmt: skip
    """One page group (first_page..last_page): record its children beside the images and
    quarantined streams that extraction already wrote to the revision's archive (once per
    content hash), and write the group's child records (a per-page table in the step's
    metadata).

    `staged` ties each archive step to `stage_report` as well as to its own extraction. Without
    it, a re-execution from failure of a run killed before any extraction finished selects the
    unresolved `archive_pages[?]`, which Dagster then resolves for every task, including tasks
    never extracted ("Attempting to access run_id, but it was not provided when constructing
    the OutputContext"). With it, only the interrupted task's steps are selected, and
    `publish_manifest` completes the rest of the plan."""
    if extracted.task.ref != staged.ref:
        raise dg.Failure("archive_pages got a task of another revision", allow_retries=False)
    attempt = context.retry_number + 1
    archived, children = guarded(
        context, lambda: core_archive.archive(store.get_store(), extracted, attempt)
    )
    return dg.Output(archived, metadata=task_metadata(archived, children))


@dg.op(
    out={
        "result": dg.Out(PublishedManifest),
        **{spec.get_python_identifier(): dg.Out(is_required=False) for spec in MONTH_CHECK_SPECS},
    },
    retry_policy=STORAGE_RETRY,
)
def publish_manifest(
    context: dg.OpExecutionContext,
    store: StoreResource,
    settings: WorkerResource,
    checks: CheckSettingsResource,
    staged: StagedReport,
    archived: list[ArchivedTask],
):
    """Write the revision's manifest (or return the existing one for an unchanged report), then
    evaluate the month's checks on it (they show on this partition of `report_manifest`).
    Planned tasks missing from `archived` are extracted and archived here first."""
    worker_settings = settings.settings()
    retention = worker_settings.retention
    completed = guarded(
        context,
        lambda: completion.complete_plan(
            store.get_store(), staged, archived, worker_settings, owner(context)
        ),
    )
    if completed:
        keys = ", ".join(task.task.task_key for task in completed)
        context.log.warning(f"{len(completed)} planned task(s) had no result; done here: {keys}")
    archived = archived + completed
    manifest, reused = guarded(
        context, lambda: core_archive.publish(store.get_store(), staged, archived, retention)
    )
    key = manifest_key(manifest.report_id, manifest.parent_revision)  # the month's revision
    if manifest.parent_revision != staged.ref.revision and not reused:
        context.log.warning(
            f"revision {staged.ref.revision} did not become the month's: {manifest.month} "
            f"holds revision {manifest.parent_revision}, of a report that arrived later (or a "
            "newer extractor); it was superseded at once"
        )
    published = PublishedManifest.of(manifest, key)
    results = guarded(
        context,
        lambda: list(
            month_check_results(store.get_store(), manifest, checks.thresholds(), utc_now())
        ),
    )
    metadata = manifest_metadata(manifest, key, reused)
    yield dg.Output(
        published, "result", metadata={**metadata, "tasks_completed_here": len(completed)}
    )
    yield from results

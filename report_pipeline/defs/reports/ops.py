"""The ops of `report_manifest`: adapters from Dagster to the core's steps, one core function
each. `stage_report` translates what core/stage_decision.py decides for the run's month (no
report, a superseded report, reuse, a claim another run holds, staged) into Dagster's outputs."""

from collections.abc import Iterator
from functools import partial

import dagster as dg
from pydantic import Field

from report_pipeline.core import steps
from report_pipeline.core.archive import publishing
from report_pipeline.core.intake import claims
from report_pipeline.core.intake.month_report import NO_REPORT
from report_pipeline.core.intake.submission import REVISION_TAG, check_open, revision_tags
from report_pipeline.core.model import handover
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.keys import manifest_key
from report_pipeline.core.model.messages import (
    ArchivedTask,
    ExtractedTask,
    PageTask,
    PublishedManifest,
    StagedReport,
)
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.stage_decision import (
    ClaimLost,
    Decision,
    NothingToStage,
    Reused,
    RunAsks,
    RunIdentity,
    Staged,
    stage_for_run,
)
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.op_outputs import uploaded_together
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports.claiming import runs_of
from report_pipeline.defs.reports.guard import STORAGE_RETRY, guarded, guarded_beside, owner
from report_pipeline.defs.reports.metadata import (
    manifest_metadata,
    page_group_metadata,
    staged_metadata,
    task_metadata,
)
from report_pipeline.defs.reports.month_checks import MONTH_CHECK_SPECS, month_check_results
from report_pipeline.defs.reports.no_report import record_no_report, record_not_latest


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


# Where publish_manifest left the month: the manifest now current and the generation of the
# month's record that names it (core/model/current.py); manifest_table reads them.
PUBLISHED_MANIFEST_TAG = "report_pipeline/published_manifest"
MONTH_GENERATION_TAG = "report_pipeline/month_generation"


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
    settings: PipelineSettingsResource,
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
    lineage = (context.run.parent_run_id, context.run.root_run_id)  # set on a re-execution
    run = RunIdentity(context.run_id, context.run.tags.get(claims.CLAIM_TAG, ""),
                      runs_of(context.instance), tuple(r for r in lineage if r))  # fmt: skip

    def tag(staged: StagedReport) -> None:
        chosen = staged.source_file.source if staged.source_file else inbox.name
        tag_run_with_revision(context, staged, chosen)

    def work() -> Decision:
        check_open(month, monthly_partitions.has_partition_key)
        named = inbox.source(config.source)  # an unknown source name is refused here
        asks = RunAsks(month, named.name, config.report_key, config.source_hash, pages_per_task,
                       settings.target_task_units)  # fmt: skip
        sources = inbox.report_sources()
        return stage_for_run(store.get_store(), sources, settings.settings(), asks, run,
                             owner(context), on_revision=tag)  # fmt: skip

    decision = guarded(context, work)
    if isinstance(decision, NothingToStage):
        thresholds = checks.thresholds()
        record = record_no_report if decision.why == NO_REPORT else record_not_latest
        why = decision.message
        guarded(context, lambda: record(context, store.get_store(), thresholds, why))
        return
    if isinstance(decision, ClaimLost):  # one run per revision extracts it
        context.log.warning(f"nothing extracted in this run: {decision.claim.describe()}")
        return
    if isinstance(decision, Staged) and decision.claim.claim.token != run.claim_token:
        # a UI launch or backfill took the claim: tagged, so intake finds it as the holder
        context.instance.add_run_tags(
            context.run_id, {claims.CLAIM_TAG: decision.claim.claim.token}
        )
    staged = decision.staged
    tasks = decision.tasks if isinstance(decision, Staged) else []
    if isinstance(decision, Reused):
        context.log.info("revision already archived with a complete manifest: nothing to extract")
    meta = {**staged_metadata(staged), "page_groups": len(tasks), "pages_per_task": pages_per_task,
            "target_task_units": settings.target_task_units}  # fmt: skip
    with uploaded_together(context):  # side by side, all stored before the step succeeds
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


@dg.op(out=dg.Out(ExtractedTask), retry_policy=STORAGE_RETRY)
def extract_pages(
    context: dg.OpExecutionContext,
    store: StoreResource,
    settings: PipelineSettingsResource,
    task: PageTask,
) -> Iterator[dg.Output[ExtractedTask]]:
    """One page group (first_page..last_page): decode, validate and normalize every image its
    pages draw, in a private workdir. Bad bytes are quarantined on the spot (never retried);
    results go to the store, the outcomes file beside the step's output (one wait on S3, not
    two): the step succeeds only once both are stored."""
    attempt = context.retry_number + 1  # recorded in the manifest with archive_pages's
    backend = guarded(context, store.get_store)  # in the op's thread (see publish_manifest)
    extracted, write_outcomes = guarded(
        context,
        lambda: steps.extract_unwritten(
            backend, task, settings.settings(), owner(context), attempt
        ),
    )
    metadata = {
        **page_group_metadata(task),
        "validated": extracted.validated,
        "quarantined": extracted.quarantined,
        "peak_rss_mib": round(extracted.peak_rss_kib / 1024, 1),
    }
    with guarded_beside(context, backend, write_outcomes):
        yield dg.Output(extracted, metadata=metadata)


@dg.op(out=dg.Out(ArchivedTask), retry_policy=STORAGE_RETRY)
def archive_pages(
    context: dg.OpExecutionContext, store: StoreResource, staged: StagedReport,
    extracted: ExtractedTask,
) -> Iterator[dg.Output[ArchivedTask]]:  # fmt: skip
    """One page group (first_page..last_page): record its children beside the images and
    quarantined streams that extraction already wrote to the revision's archive (once per
    content hash), and write the group's child records (a per-page table in the step's
    metadata). The records are written beside the step's output (one wait on S3, not two):
    the step succeeds only once both are stored.

    `staged` ties each archive step to `stage_report` as well as to its own extraction. Without
    it, a re-execution from failure of a run killed before any extraction finished selects the
    unresolved `archive_pages[?]`, which Dagster then resolves for every task, including tasks
    never extracted ("Attempting to access run_id, but it was not provided when constructing
    the OutputContext"). With it, only the interrupted task's steps are selected, and
    `publish_manifest` completes the rest of the plan."""
    if extracted.task.ref != staged.ref:
        raise dg.Failure("archive_pages got a task of another revision", allow_retries=False)
    attempt = context.retry_number + 1
    backend = guarded(context, store.get_store)  # in the op's thread (see publish_manifest)
    archived, children = guarded(
        context, lambda: publishing.children_of(backend, extracted, attempt)
    )
    write = partial(publishing.write_children, backend, archived, children)
    with guarded_beside(context, backend, write):
        yield dg.Output(archived, metadata=task_metadata(archived, children))


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
    settings: PipelineSettingsResource,
    checks: CheckSettingsResource,
    staged: StagedReport,
    archived: list[ArchivedTask],
):
    """Write the revision's manifest (or return the existing one for an unchanged report), then
    evaluate the month's checks on it (they show on this partition of `report_manifest`).
    Planned tasks missing from `archived` are extracted and archived here first."""
    worker_settings = settings.settings()
    retention = worker_settings.retention
    results: list[dg.AssetCheckResult] = []
    completed: list[ArchivedTask] = []
    # one store for the step attempt, taken here: `evaluate` runs in a thread of its own, where
    # a store made then would not know the step (the fault layer's sessions are per attempt)
    backend = guarded(context, store.get_store)

    def complete(missing: list[PageTask]) -> list[ArchivedTask]:
        completed[:] = steps.complete_tasks(backend, missing, worker_settings, owner(context))
        return completed

    def evaluate(published: Manifest) -> None:  # beside the working material's deletion
        now, limits = utc_now(), checks.thresholds()
        results[:] = month_check_results(backend, published, limits, now)

    generation: list[int] = []
    manifest, reused = guarded(
        context,
        lambda: publishing.publish(
            backend, staged, archived, retention, evaluate, complete, generation.append
        ),
    )
    if completed:
        keys = ", ".join(task.task.task_key for task in completed)
        context.log.warning(f"{len(completed)} planned task(s) had no result; done here: {keys}")
    key = manifest_key(manifest.report_id, manifest.parent_revision)  # the month's revision
    if manifest.parent_revision != staged.ref.revision and not reused:
        context.log.warning(
            f"revision {staged.ref.revision} did not become the month's: {manifest.month} "
            f"holds revision {manifest.parent_revision}, of a report that arrived later (or a "
            "newer extractor); it was superseded at once"
        )
    if generation and manifest.state == "complete":  # for manifest_table, later in the run
        context.instance.add_run_tags(
            context.run.run_id,
            {PUBLISHED_MANIFEST_TAG: key, MONTH_GENERATION_TAG: str(generation[-1])},
        )
        handover.hand_over_manifest(backend, key, generation[-1], manifest)  # the same, in-process
    published = PublishedManifest.of(manifest, key)
    metadata = manifest_metadata(manifest, key, reused)
    yield dg.Output(
        published, "result", metadata={**metadata, "tasks_completed_here": len(completed)}
    )
    yield from results

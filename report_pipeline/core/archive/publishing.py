"""The archive side: record each task's children beside its archived images, then publish the
manifest."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.archive import months, succession
from report_pipeline.core.archive.carry import carried
from report_pipeline.core.model import handover, keys, store_json
from report_pipeline.core.model.clock import deadlines_for, iso, parse_iso, utc_now
from report_pipeline.core.model.messages import (
    ArchivedTask,
    ExtractedTask,
    PageTask,
    StagedReport,
)
from report_pipeline.core.model.records import ChildRecord, Manifest, OutcomeRecord
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.model.store_json import complete_manifest
from report_pipeline.core.plan.record import Plan, read_plan
from report_pipeline.core.retention import deadlines, deletion_log
from report_pipeline.core.retention.material import working_objects
from report_pipeline.core.storage.parallel_io import together
from report_pipeline.core.storage.store import MissingObject, Store


def _child(record: OutcomeRecord, queued_at: str, attempt: int, key: str | None) -> ChildRecord:
    """`attempt` counts every step attempt the occurrence took: its extraction's attempts plus
    its archiving's retries (1 when both went through first time)."""
    outcome = record.outcome
    archived = outcome.state == "validated"
    return ChildRecord(
        sequence=0,
        page=outcome.page,
        index=outcome.index,
        state=_STATES.get(outcome.state, "quarantined"),
        attempts=attempt,
        validated_first_attempt=attempt == 1,  # its outcome, either way, on the first attempt
        queued_at=queued_at,
        started_at=outcome.started_at,
        finished_at=iso(utc_now()),
        content_hash=outcome.content_hash,
        width=outcome.width,
        height=outcome.height,
        format="png" if archived else None,
        mode=outcome.mode,
        bytes=outcome.png_bytes,
        stream_bytes=outcome.stream_bytes,
        declared_type=outcome.declared_type,
        signature=outcome.signature,
        quarantine_reason=outcome.reason,
        quarantine_detail=outcome.detail,
        object_key=key,
        cleanup_lease=record.lease,
        origin=outcome.origin,
        xref=outcome.xref,
        md5=record.md5 if key else None,  # of the object's bytes, at upload
        notes=outcome.notes,
        hidden=outcome.hidden,
    )


_STATES = {"validated": "archived", "hidden": "hidden"}  # the worker's verdict -> the child's


def record_children(
    store: Store, extracted: ExtractedTask, attempt: int
) -> tuple[ArchivedTask, list[ChildRecord]]:
    """Record the task's children in the archive: its images (and quarantined streams) are
    already there, written once each by extraction to their content-addressed keys (an outcomes
    file from the older layout, images in work/, is refused: re-run the partition). Idempotent:
    a retry rewrites the same records. The outcomes are extraction's outcomes file, or what it
    handed over in this process (core/model/handover.py). The outcomes file is working
    material, deleted with the rest of it once the manifest is complete (`publish`), or by the
    janitor."""
    archived, children = children_of(store, extracted, attempt)
    write_children(store, archived, children)
    return archived, children


def children_of(
    store: Store, extracted: ExtractedTask, attempt: int
) -> tuple[ArchivedTask, list[ChildRecord]]:
    """What `record_children` records, not yet written (`write_children` writes it): the
    archive step uploads its result beside that write (defs/reports/ops.py)."""
    task = extracted.task
    outcomes = handover.take(extracted)  # extraction's, in this process (handover.py)
    if outcomes is None:
        outcomes = store_json.read_outcomes(store, extracted.outcomes_key)
    tries = extracted.attempts + attempt - 1
    children = [_child(outcome, task.queued_at, tries, outcome.object_key) for outcome in outcomes]
    children_key = keys.children_key(task.ref.report_id, task.ref.revision, task.task_key)
    quarantined = sum(c.state == "quarantined" for c in children)
    archived = sum(c.state == "archived" for c in children)
    result = ArchivedTask(
        task, children_key, archived, quarantined, extracted.new_objects, attempt,
        extracted.peak_rss_kib,
    )  # fmt: skip
    return result, children


def write_children(store: Store, archived: ArchivedTask, children: list[ChildRecord]) -> None:
    """The task's child records, at `archived.children_key` (the outcomes stay: work/
    material)."""
    store_json.write_children(store, archived.children_key, children)


def publish(
    store: Store,
    staged: StagedReport,
    archived: list[ArchivedTask],
    retention: RetentionPolicy,
    alongside: Callable[[Manifest], object] = lambda _: None,
    complete: Callable[[list[PageTask]], list[ArchivedTask]] | None = None,
    told: Callable[[int], None] = lambda _: None,
) -> tuple[Manifest, bool]:
    """Write the revision's manifest once and make it the month's current revision; returns the
    month's manifest now and whether it was reused (nothing written). `alongside` is called
    once with that manifest before publish returns, side by side with the deletion of the
    working material when there is one (on S3: the month's checks wait on no deletion).
    `complete` extracts and archives the planned tasks `archived` lacks (steps.complete_tasks),
    found in the plan publish reads anyway, before the manifest is built. `told`: the
    generation of the month's record that names the manifest returned, when publish learns it
    (manifest_table checks only that no later generation exists).

    A report the month already holds (this revision, or one a review made of it) gets the
    month's manifest back unchanged. A new complete revision keeps the month's archive deadline
    (set at its first archive: a correction or an upgrade never extends it), carries the
    decisions taken on the month's revision over to the same images, and supersedes that
    revision, unless the month's is newer (core/archive/succession.py): then the month's is
    returned. Working material (the staged source, work leftovers) is deleted once complete.
    """
    ref, now = staged.ref, utc_now()
    month, existing, inputs = together(
        store,
        lambda: months.current(store, ref.month, besides=ref.revision, report=ref.report_id),
        lambda: complete_manifest(store, ref),
        lambda: _inputs(store, staged, archived, missing_ok=True),
    )  # one wait for all three on S3; the inputs are wasted only on a rerun
    live = month.manifest if month and month.live else None
    if live is not None and months.holds(live, ref):
        if month is not None and month.head is not None:
            told(month.head.generation)
        alongside(live)
        return live, True
    if existing is not None:  # written, but a crash left it short of the month's
        current = succession.make_current(store, existing, "", now, told=told)
        alongside(current)
        return current, True
    if complete is not None and not staged.reused:
        done = {task.task.task_key for task in archived}
        plan = inputs[0] if inputs else read_plan(store, ref)
        if missing := [task for task in plan.tasks if task.task_key not in done]:
            archived = archived + complete(missing)
            inputs = None  # their children are read with the others'
    inputs = inputs or _inputs(store, staged, archived)  # missing: say so now
    manifest = _built(store, staged, archived, retention, live, now, *inputs)
    complete = manifest.state == "complete"
    if complete:  # the long clock's marker first: a complete manifest never lacks one
        archive_by = parse_iso(manifest.deadlines.archive_delete_by)
        deadlines.record(store, deadlines.ARCHIVE, archive_by, ref.report_id, ref.revision)
    store_json.write_manifest(store, ref.manifest_key, manifest)
    if not complete:
        alongside(manifest)
        return manifest, False
    work_by = parse_iso(manifest.deadlines.work_delete_by)
    basis = live.parent_revision if live else ""

    def clean_up() -> None:
        material = working_objects(store, ref.report_id, ref.revision)
        deletion_log.delete_audited(
            store, "working_material", ref.report_id, ref.revision, work_by, now, material
        )  # fmt: skip

    def made_current() -> Manifest:
        made = succession.make_current(store, manifest, basis, now, month, told)
        alongside(made)
        return made

    # The deletion is independent once the manifest is complete, so it runs beside the month's
    # record (one wait fewer on S3): a rerun makes a complete revision current without any
    # working material (above), and a crash before the deletion leaves it to the janitor.
    current, _ = together(store, made_current, clean_up)
    return current, False


def _inputs(
    store: Store, staged: StagedReport, archived: list[ArchivedTask], missing_ok: bool = False
) -> tuple[Plan, list[ChildRecord]] | None:
    """The revision's plan and its tasks' children, in page order, read side by side. One of
    them missing: None with `missing_ok` (a month that holds the report already needs none),
    else MissingObject."""
    tasks = sorted(archived, key=lambda t: t.task.first_page)
    try:
        plan, *children = together(
            store,
            lambda: read_plan(store, staged.ref),
            *[lambda key=task.children_key: store_json.read_children(store, key)
              for task in tasks],
        )  # fmt: skip
    except MissingObject:
        if missing_ok:
            return None
        raise
    return plan, [child for records in children for child in records]


def _built(
    store: Store, staged: StagedReport, archived: list[ArchivedTask], retention: RetentionPolicy,
    live: Manifest | None, now: datetime, plan: Plan, records: list[ChildRecord],
) -> Manifest:  # fmt: skip
    """The revision's manifest from its plan and its tasks' children: the month's deadline when
    it has a live revision, and that revision's decisions on the same images."""
    peak = max((task.peak_rss_kib for task in archived), default=0)
    clocks = deadlines_for(now, retention)
    if live is not None:
        clocks = replace(clocks, archive_delete_by=live.deadlines.archive_delete_by)
    manifest = mf.build_manifest(
        staged.ref, plan.expected, mf.sequenced(records), clocks, iso(now), peak,
        staged.page_count, staged.facts, plan.streams, staged.source_file,
    )  # fmt: skip
    if live is not None and manifest.state == "complete":
        manifest = carried(store, manifest, live)
    return manifest

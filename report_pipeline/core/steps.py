"""Each step's work over the Store, free of Dagster: stage (and plan), extract, and completing a
plan (the planned tasks a re-execution left out are extracted and archived in the manifest step,
so the manifest accounts for the plan, not for whatever reached the step). Recording the
children and publishing the manifest are the archive's (core/archive/publishing.py).

Bytes move between steps only through the store; every step works in its own private directory.
"""

from __future__ import annotations

import hashlib
import resource
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path

from report_pipeline.core.archive.months import Held, held
from report_pipeline.core.archive.publishing import record_children
from report_pipeline.core.decode.child import Decoded
from report_pipeline.core.decode.pool import (
    CpuBudgetExceeded,
    decode_pages,
    peak_child_rss_kib,
)
from report_pipeline.core.intake.intake import RefusedInput, identify
from report_pipeline.core.model import handover, keys, store_json
from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.messages import (
    ArchivedTask,
    ExtractedTask,
    PageTask,
    RevisionRef,
    StagedReport,
)
from report_pipeline.core.model.outcome import ImageOutcome
from report_pipeline.core.model.records import OutcomeRecord, SourceFile
from report_pipeline.core.model.settings import PipelineSettings, TaskSizing
from report_pipeline.core.pdf.pages import Draws
from report_pipeline.core.plan import walk
from report_pipeline.core.plan.store import draws_from, plan, read_draws
from report_pipeline.core.retention import deadlines
from report_pipeline.core.scratch.workdir import lease_for, private_file, private_workdir
from report_pipeline.core.storage.parallel_io import BackgroundPuts, meanwhile, together
from report_pipeline.core.storage.store import Store


def work_deadline(settings: PipelineSettings) -> datetime:
    """When an unfinished revision's working material may go: the run's lease + the short clock."""
    return utc_now() + settings.retention.unfinished_hold


def mark_work(store: Store, ref: RevisionRef, settings: PipelineSettings) -> None:
    """The short clock's marker, written BEFORE the working material it covers (the staged
    source, work objects, and whatever the revision puts in the archive before its manifest is
    published): a crash between the two leaves a marker with nothing behind it (done on the
    janitor's next pass), never material that no marker points to."""
    deadlines.record(store, deadlines.WORK, work_deadline(settings), ref.report_id, ref.revision)


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def stage(
    store: Store, source: Path, source_name: str, month: str, superseded: int,
    settings: PipelineSettings, owner: str, pages_per_task: int = TaskSizing.pages_per_task,
    target_units: float = TaskSizing.target_units,
    expected_hash: str = "",
    source_file: SourceFile | None = None,
    known: Callable[[StagedReport], None] = lambda _: None,
    claim: Callable[[StagedReport], object] = lambda _: None,
    read_ahead: tuple[RevisionRef, Held] | None = None,
) -> tuple[StagedReport, list[PageTask]]:  # fmt: skip
    """Stream the report into a private file with a byte cap, check it, stage it and plan it.

    Planning happens here because the PDF is already open: one task per page group, and the
    plan (expected images per page) is kept in the archive. A revision that already has a
    complete manifest is neither staged nor planned again. `source_file`: which file of the
    month folder this is, as intake chose it; staging adds its pages, bytes and sha256.
    `known` is told the staged report once its pages are walked, before `claim`, which runs
    beside the writes of the draws and the plan (stage_decision.py: the run's claim).
    `read_ahead`: what the month held of a revision, read while intake recorded the arrival
    (`months.held`); read here unless it is of this revision.

    On S3 the work marker and then the staged source are written while the planning walk runs
    (its child works on the local copy): a report the walk refuses leaves its staged copy to
    the janitor, under the marker's short clock, as any run that fails after staging does.
    """
    with private_workdir(settings.work_root, lease_for(settings, owner)) as workdir:
        found = identify(source, workdir, source_name, month, settings, expected_hash)
        ref, checked = found.ref, found.inspection
        used = source_file and replace(
            source_file, bytes=found.size, sha256=ref.source_hash, pages=checked.pages
        )
        staged = StagedReport(
            ref, checked.pages, found.size, superseded, False, checked.facts, used
        )
        if read_ahead is None or read_ahead[0] != ref:
            read_ahead = ref, held(store, ref)
        if any(found is not None for found in read_ahead[1]):
            return replace(staged, reused=True), []  # the month holds it (publish says how)

        def upload() -> None:  # the marker before the material it covers
            mark_work(store, ref, settings)
            store.put_file(ref.staged_key, found.path)

        with meanwhile(store, upload):  # the staged source is in the store before the plan
            walked = _image_counts(found.path, checked.pages, settings)
        known(staged)
        tasks = plan(store, ref, walked.counts, pages_per_task, target_units, settings.decode,
                     walked.streams, walked.unread, walked.draws, (lambda: claim(staged),),
                     found.path)  # fmt: skip
    return staged, tasks


def _image_counts(path: Path, pages: int, settings: PipelineSettings) -> walk.Walked:
    """Per page (images, pixels, broken or repaired streams) for planning, found in a confined child
    (core/plan/walk.py); every page intake counted must be listed."""
    try:
        return walk.image_counts(path, pages, settings.decode)
    except walk.WalkFailed as failed:
        raise RefusedInput(failed.reason, failed.message) from None


def _object_key(task: PageTask, outcome: ImageOutcome, payload: bytes | None) -> str | None:
    """Where a draw's bytes go: its content-addressed place in the revision's archive (the
    normalized PNG by its sha256, quarantine evidence by the sha256 of the raw stream)."""
    if outcome.state == "validated":
        return task.ref.image_key(outcome.content_hash)
    if payload:
        return task.ref.evidence_key(hashlib.sha256(payload).hexdigest())
    return None


UNREAD_INDEX = 10_000  # after every draw MuPDF read on the page (pdf.pages.MAX_DRAWS_PER_PAGE)


_UNREAD_WHOLE = (
    "undecodable", "an inline image whose BI … ID … EI is complete, which MuPDF did not read: it "
    "could not load it (a colour space, filter or parameter it does not know, or data shorter "
    "than its dictionary declares), or it stopped reading the page's content before it; the page "
    "draws nothing of it",
)  # fmt: skip
_UNREAD_CUT = (
    "truncated",
    "an inline image cut off by the end of its content stream: MuPDF never read it",
)


def _unread_inline(task: PageTask) -> Iterator[tuple[ImageOutcome, None, None]]:
    """A record for each inline image the planning walk saw begun but MuPDF never read, never
    silently absent (core/plan/walk.py): one whose BI … EI is complete is quarantined
    `undecodable`, the one the end of the content cuts off `truncated`."""
    now = iso(utc_now())
    for page, count, whole in task.unread_inline:
        for k in range(count):
            reason, detail = _UNREAD_WHOLE if k < whole else _UNREAD_CUT
            outcome = ImageOutcome(
                page=page, index=UNREAD_INDEX + k, state="quarantined", reason=reason,
                detail=detail, declared_type="inline", signature=None, width=0, height=0,
                mode=None, content_hash=None, png_bytes=0, stream_bytes=0, started_at=now,
                finished_at=now, origin="inline", xref=0,
            )  # fmt: skip
            yield outcome, None, None


# decode_pages' signature: (pdf, pages, limits, decode settings, CPU budget, planned draws)
Decoders = Callable[..., Iterator[Decoded]]


def extract(
    store: Store, task: PageTask, settings: PipelineSettings, owner: str, attempt: int = 1,
    decoders: Decoders = decode_pages,
) -> ExtractedTask:  # fmt: skip
    """`extract_unwritten`, its outcomes file written before it returns."""
    extracted, write_outcomes = extract_unwritten(store, task, settings, owner, attempt, decoders)
    write_outcomes()
    return extracted


def extract_unwritten(
    store: Store, task: PageTask, settings: PipelineSettings, owner: str, attempt: int = 1,
    decoders: Decoders = decode_pages,
) -> tuple[ExtractedTask, Callable[[], None]]:  # fmt: skip
    """Decode, validate and normalize the task's images in isolated decoders, and write each
    validated image (and each quarantined stream) once, straight to its content-addressed key in
    the revision's archive; the outcomes go to `work/` for the archive step.

    Validation comes first: only bytes that passed it (or are kept as quarantine evidence) are
    written. The objects sit in the archive's key space but stay on the short clock until the
    revision's manifest is published: the work marker written here, before any of them, covers
    the revision's archive prefix while it has no complete manifest (retention/material.py), so
    a revision that never publishes loses them with its other working material.

    An image drawn several times is decoded once per decoder; each content is uploaded once, and
    only if absent (a retry or a rerun writes nothing new). `attempt` is the step's attempt
    (1: the first), kept on the result for the manifest. `decoders`: the confined pool; only a
    measurement or a test that compares against it passes another (decode.child.decode_in_process).

    Returns the result and the outcomes file's write, which the caller runs before the task
    counts as done (`extract` at once; the extraction step beside its output's upload, one S3
    wait instead of two: defs/reports/ops.py). Only a successful step's outcomes are ever read.
    """
    started = utc_now()
    lease = lease_for(settings, owner)
    records: list[OutcomeRecord] = []
    with private_workdir(settings.work_root, lease) as workdir:
        path = private_file(workdir, ".pdf")
        # The marker only has to precede this task's objects (a later deadline than staging's).
        # Staged in this process (handover.py): the source and draws are at hand, and the
        # marker is written while decoding starts, before any upload. Else side by side on S3
        # (one wait, not three): the marker and the two reads, which depend on nothing.
        mark = None
        if (handed := handover.take_plan(task)) is not None:
            path.write_bytes(handed[0])
            planned = draws_from(handed[1], task.first_page, task.last_page)
            mark = partial(mark_work, store, task.ref, settings)
        else:
            *_, planned = together(
                store,
                lambda: store.fetch(task.ref.staged_key, path, settings.limits.max_report_bytes),
                lambda: mark_work(store, task.ref, settings),
                lambda: read_draws(store, task.ref, task.first_page, task.last_page),
            )
        with BackgroundPuts(store, first=mark) as uploads:  # S3: uploads overlap decoding
            for outcome, key, md5 in _decode(uploads, task, path, settings, planned, decoders):
                records.append(OutcomeRecord(outcome, key, lease.lease_until, md5))
            records.sort(key=lambda r: (r.outcome.page, r.outcome.index))
            outcomes_key = keys.outcomes_key(task.ref.revision, task.task_key)
            written = store_json.outcomes_to_bytes(records)
    valid = sum(r.outcome.state == "validated" for r in records)
    quarantined = sum(r.outcome.state == "quarantined" for r in records)
    peak = max(peak_rss_kib(), peak_child_rss_kib())
    extracted = ExtractedTask(
        task, outcomes_key, valid, quarantined, iso(started), lease.lease_until, peak,
        uploads.created, attempt,
    )  # fmt: skip
    handover.hand_over(store, extracted, written)  # the archive step, if in this process
    # after every upload (the marker's included): the step fails, and its retry writes them
    # all again, if any of them fails
    return extracted, partial(store.put_bytes, outcomes_key, written)


def _decode(
    uploads: BackgroundPuts, task: PageTask, path: Path, settings: PipelineSettings,
    planned: dict[int, Draws], decoders: Decoders,
) -> Iterator[tuple[ImageOutcome, str | None, str | None]]:  # fmt: skip
    """Each draw's outcome, located on its page, the key of its bytes and their MD5 (what S3
    checks on upload and lists as the ETag; the archive check compares the two). `planned`: the
    pages' draws as planned, so the decoders need not walk them again."""
    known: dict[tuple[int, str], tuple[ImageOutcome, str | None]] = {}  # by (xref, defaults)
    written: dict[str, str] = {}  # key -> MD5 of the bytes uploaded there
    pages = list(range(task.first_page, task.last_page + 1))
    budget = task.cpu_budget_s or settings.decode.report_cpu_seconds
    try:
        for item in decoders(path, pages, settings.limits, settings.decode, budget, planned):
            if item.outcome is None:  # the same image as an earlier draw, at this draw's place
                decoded, key = known[item.share]
                place = {"page": item.page, "index": item.index, "origin": item.origin}
                outcome = replace(decoded, **place, hidden=item.hidden)
            else:
                outcome, key = item.outcome, _object_key(task, item.outcome, item.payload)
                if key and key not in written and item.payload:
                    # hashed once: recorded for the manifest and sent as the upload's Content-MD5
                    written[key] = hashlib.md5(item.payload, usedforsecurity=False).hexdigest()
                    uploads.put_if_absent(key, item.payload, written[key])
                if item.xref and outcome.state != "hidden":  # a repeat is of a decoded draw
                    known[item.share] = (outcome, key)
            yield outcome, key, written.get(key or "")
        yield from _unread_inline(task)
    except CpuBudgetExceeded as exc:
        raise RefusedInput("cpu_budget_exceeded", f"{exc} (the report's budget is "
                           f"{settings.decode.report_cpu_seconds:.0f} s)") from None  # fmt: skip


def complete_tasks(
    store: Store, missing: list[PageTask], settings: PipelineSettings, owner: str
) -> list[ArchivedTask]:
    """Extract and archive here the planned tasks that have no result (`missing`: publishing
    finds them in the plan, `publish(complete=...)`).

    The manifest must account for the plan, not for whatever reached this step. A re-execution
    from failure of a run whose worker died mid fan-out leaves out the mapped tasks that never
    started (Dagster selects only steps with a failed or unfinished attempt), and the collected
    list is then silently short. Both steps are idempotent, so doing them again is safe.
    """
    return [record_children(store, extract(store, task, settings, owner), 1)[0] for task in missing]

"""The archive side: record each task's children beside its archived images, then publish the
manifest."""

from __future__ import annotations

from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import deadlines_for, iso, parse_iso, utc_now
from report_pipeline.core.model.messages import ArchivedTask, ExtractedTask, StagedReport
from report_pipeline.core.model.plan import read_plan
from report_pipeline.core.model.records import ChildRecord, Manifest, OutcomeRecord
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.model.store_json import complete_manifest
from report_pipeline.core.retention import deadlines, deletion_log
from report_pipeline.core.retention.material import working_objects
from report_pipeline.core.storage.store import Store


def _child(record: OutcomeRecord, queued_at: str, attempt: int, key: str | None) -> ChildRecord:
    """`attempt` counts every step attempt the occurrence took: its extraction's attempts plus
    its archiving's retries (1 when both went through first time)."""
    outcome = record.outcome
    archived = outcome.state == "validated"
    return ChildRecord(
        sequence=0,
        page=outcome.page,
        index=outcome.index,
        state="archived" if archived else "quarantined",
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
    )


def archive(
    store: Store, extracted: ExtractedTask, attempt: int
) -> tuple[ArchivedTask, list[ChildRecord]]:
    """Record the task's children in the archive: its images (and quarantined streams) are
    already there, written once each by extraction to their content-addressed keys (an outcomes
    file from the older layout, images in work/, is refused: re-run the partition). Idempotent:
    a retry rewrites the same records."""
    task = extracted.task
    outcomes = store_json.read_outcomes(store, extracted.outcomes_key)
    tries = extracted.attempts + attempt - 1
    children = [_child(outcome, task.queued_at, tries, outcome.object_key) for outcome in outcomes]
    children_key = keys.children_key(task.ref.report_id, task.ref.revision, task.task_key)
    store_json.write_children(store, children_key, children)
    store.delete_many([extracted.outcomes_key])  # S3: one request (delete asks HEAD first)
    quarantined = sum(c.state == "quarantined" for c in children)
    archived = len(children) - quarantined
    result = ArchivedTask(
        task, children_key, archived, quarantined, extracted.new_objects, attempt,
        extracted.peak_rss_kib,
    )  # fmt: skip
    return result, children


def publish(
    store: Store,
    staged: StagedReport,
    archived: list[ArchivedTask],
    retention: RetentionPolicy,
) -> tuple[Manifest, bool]:
    """Write the manifest once; a rerun of the same revision gets the stored one back unchanged.

    Returns the manifest and whether it was reused. Working material (the staged source and any
    work leftovers) is deleted once the revision is complete.
    """
    ref = staged.ref
    existing = complete_manifest(store, ref)
    if existing is not None:
        return existing, True
    plan = read_plan(store, ref)
    records: list[ChildRecord] = []
    for task in sorted(archived, key=lambda t: t.task.first_page):
        records.extend(store_json.read_children(store, task.children_key))
    now = utc_now()
    peak = max((task.peak_rss_kib for task in archived), default=0)
    manifest = mf.build_manifest(
        ref, plan.expected, mf.sequenced(records), deadlines_for(now, retention), iso(now), peak,
        staged.page_count, staged.facts, plan.broken,
    )  # fmt: skip
    complete = manifest.state == "complete"
    if complete:  # the long clock's marker first: a complete manifest never lacks one
        archive_by = parse_iso(manifest.deadlines.archive_delete_by)
        deadlines.record(store, deadlines.ARCHIVE, archive_by, ref.report_id, ref.revision)
    store_json.write_manifest(store, ref.manifest_key, manifest)
    if complete:
        work_by = parse_iso(manifest.deadlines.work_delete_by)
        material = working_objects(store, ref.report_id, ref.revision)
        deletion_log.delete_audited(
            store, "working_material", ref.report_id, ref.revision, work_by, now, material
        )
    return manifest, False

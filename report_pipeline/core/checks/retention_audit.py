"""The retention audit: the two whole-archive checks (nothing kept past either clock), computed
from the store and the workers' disk, not from the asset's data, and `audit_all` with the two
per-revision checks of revision_audit.py. Overdue means past a deadline by more than `grace`
(the janitor runs every few minutes, so a fresh deadline is not yet a failure)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from report_pipeline.core.checks.check_outcome import DEFAULT_GRACE, CheckOutcome, Overdue
from report_pipeline.core.checks.revision_audit import (
    archive_matches_manifest,
    manifest_complete,
    read_revisions,
)
from report_pipeline.core.model.keys import archive_prefix, manifest_key
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.retention import deadlines, deletion_log, janitor, untracked
from report_pipeline.core.storage.store import Store

__all__ = ["CheckOutcome", "DEFAULT_GRACE", "audit_all", "audit_archive"]


def work_material_deleted_by_deadline(
    store: Store, work_root: Path, now: datetime, policy: RetentionPolicy, grace: timedelta
) -> CheckOutcome:
    """Bytes of working material retained past the short clock (plus grace) must be zero: what
    the index leads to, what a listing of `staged/` and `work/` finds without it, workdirs, and
    writes a crashed writer left half-done."""
    cutoff, overdue, seen = now - grace, Overdue(), set()
    for entry in deadlines.due(store, deadlines.WORK, cutoff):
        if entry.revision in seen:
            continue  # a revision marked more than once (staging, each task) counts once
        seen.add(entry.revision)
        material = janitor.revision_material(store, entry.report_id, entry.revision)
        if material and not janitor.in_use(material, cutoff, policy):
            overdue.add(f"revision {entry.revision}", entry.deadline, sum(o.size for o in material))
    found = untracked.overdue(store, cutoff, policy)
    untracked_items = [u for u in found if u.revision not in seen]  # not counted twice
    for item in untracked_items:
        overdue.add(f"{item.kind} {item.revision}", item.deadline, item.bytes)
    for _bucket, workdir, deadline in janitor.due_workdirs(
        work_root, cutoff, janitor.JanitorPass()
    ):
        overdue.add(f"workdir {workdir.name}", deadline, janitor.dir_size(workdir)[0])
    for item, name, deadline in janitor.abandoned_writes(store, cutoff, policy):
        overdue.add(f"partial write {name}", deadline, item.size)
    passed = not overdue.items
    text = "no working material past its deadline" if passed else "working material is overdue"
    metadata = {**overdue.metadata(), "untracked_items": len(untracked_items),
                "untracked_bytes": sum(u.bytes for u in untracked_items)}  # fmt: skip
    return CheckOutcome("work_material_deleted_by_deadline", passed, text, metadata)


def archive_within_retention(store: Store, now: datetime, grace: timedelta) -> CheckOutcome:
    """Nothing archived may be retained past the long clock (plus grace)."""
    overdue = Overdue()
    for entry in deadlines.due(store, deadlines.ARCHIVE, now - grace):
        prefix = archive_prefix(entry.report_id, entry.revision)
        manifest = manifest_key(entry.report_id, entry.revision)
        kept = [o for o in store.list(prefix) if o.key != manifest]
        if kept:
            overdue.add(f"revision {entry.revision}", entry.deadline, sum(o.size for o in kept))
    passed = not overdue.items
    text = "no archived revision past its deadline" if passed else "archived data is overdue"
    return CheckOutcome("archive_within_retention", passed, text, overdue.metadata())


def audit_archive(
    store: Store, work_root: Path, now: datetime, policy: RetentionPolicy,
    grace: timedelta = DEFAULT_GRACE,
) -> list[CheckOutcome]:  # fmt: skip
    """The two whole-archive checks (nothing kept past either clock), each with the cleanup lag
    (p50/p95, read once from the audit stream). They open only what is due."""
    return _with_lag(store, now, [
        work_material_deleted_by_deadline(store, work_root, now, policy, grace),
        archive_within_retention(store, now, grace),
    ])  # fmt: skip


def _with_lag(store: Store, now: datetime, outcomes: list[CheckOutcome]) -> list[CheckOutcome]:
    lag = deletion_log.lag_summary(store, now)
    return [replace(o, metadata={**o.metadata, **lag}) for o in outcomes]


def audit_all(
    store: Store, work_root: Path, now: datetime, policy: RetentionPolicy,
    grace: timedelta = DEFAULT_GRACE, month: str | None = None,
) -> list[CheckOutcome]:  # fmt: skip
    """All four checks over the store, each with the cleanup lag (what-if audits, core tests);
    `month` limits the two per-revision checks to that month's reports. Dagster splits them by
    scope: whole-archive checks on `image_archive`, per-month checks on each partition."""
    found = read_revisions(store, policy, month)
    return _with_lag(store, now, [
        work_material_deleted_by_deadline(store, work_root, now, policy, grace),
        archive_within_retention(store, now, grace),
        manifest_complete(found, store, now),
        archive_matches_manifest(found, store, now),
    ])  # fmt: skip

"""The janitor: deletes what has outlived its deadline, idempotently, never under a live lease.

Three sweeps, each opening only what is due: private workdirs (hour buckets on the worker's
disk), working material in the store (the short clock's index), and archived revisions (the
long clock's index). A fourth lists `staged/` and `work/` directly and removes expired material
that no marker covers, with what a revision found there holds unpublished in the archive
(`untracked`). A fifth removes writes a crashed writer left half-done (LocalStore's
`.partial/`; S3 has none). Every deletion becomes one audit event, written before the deletion:
a pass that cannot write its events (a full store, a throttled bucket) fails having deleted
nothing unaudited; one that fails between an event and its deletion leaves the deletion to the
next pass, which records it again. "Already gone" (a marker whose material was never written,
or already deleted) counts as done.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.keys import archive_prefix, manifest_key
from report_pipeline.core.model.records import tombstone
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.retention import deadlines, deletion_log, rejected, untracked
from report_pipeline.core.retention.deletion_log import Deletion
from report_pipeline.core.retention.material import revision_material
from report_pipeline.core.scratch.workdir import (
    BUCKET_FORMAT,
    held_by_live_process,
    named_minute,
    read_lease,
)
from report_pipeline.core.storage.store import ObjectInfo, Store

_BUCKET = re.compile(r"^\d{10}$")


@dataclass
class JanitorPass:
    deletions: list[Deletion] = field(default_factory=list)
    buckets_opened: int = 0
    entries_due: int = 0
    in_use: set[str] = field(default_factory=set)  # revisions whose due entries were kept

    @property
    def bytes_deleted(self) -> int:
        return sum(d.bytes for d in self.deletions)


def _bucket_end(name: str) -> datetime:
    return datetime.strptime(name, BUCKET_FORMAT).replace(tzinfo=UTC) + timedelta(hours=1)


def dir_size(path: Path) -> tuple[int, int]:
    files = [Path(d, f) for d, _, names in os.walk(path) for f in names]
    return sum(f.stat().st_size for f in files if f.exists()), len(files)


def due_workdirs(work_root: Path, now: datetime, stats: JanitorPass) -> Iterator[tuple]:
    """(bucket, workdir, deadline) for every workdir whose lease and deadline have elapsed and
    whose holder no longer runs on this host."""
    if not work_root.is_dir():
        return
    current = now.astimezone(UTC).strftime(BUCKET_FORMAT)
    buckets = sorted(e.name for e in os.scandir(work_root) if _BUCKET.match(e.name))
    for name in buckets:
        if name > current:
            break  # later buckets hold only live or future work
        stats.buckets_opened += 1
        bucket = work_root / name
        for entry in sorted(os.scandir(bucket), key=lambda e: e.name):
            minute = named_minute(Path(entry.path))
            if minute is not None and minute * 60 > now.timestamp():
                continue  # its name says it is not due yet: no need to open the lease
            lease = read_lease(Path(entry.path))
            if lease is None:  # crashed before writing its lease: due when the hour is over
                if now >= _bucket_end(name):
                    yield bucket, Path(entry.path), _bucket_end(name)
            elif lease.due(now) and not held_by_live_process(lease):
                yield bucket, Path(entry.path), lease.removable_from()


def sweep_workdirs(
    work_root: Path, now: datetime, stats: JanitorPass,
    audit: Callable[[Deletion], object] | None = None,
) -> None:  # fmt: skip
    """Remove every due workdir; `audit` (when given) records each one's event before it goes,
    so a failing audit stream (a full store, S3 throttling) stops the pass with nothing removed
    unaudited."""
    emptied = set()
    for bucket, workdir, deadline in list(due_workdirs(work_root, now, stats)):
        size, files = dir_size(workdir)
        event = deletion_log.deletion("workdir", workdir.name, "", "", deadline, now, size, files)
        if audit is not None:
            audit(event)
        shutil.rmtree(workdir, ignore_errors=True)
        stats.deletions.append(event)
        emptied.add(bucket)
    for bucket in emptied | _past_buckets(work_root, now):
        with contextlib.suppress(OSError):
            bucket.rmdir()  # only when empty


def _past_buckets(work_root: Path, now: datetime) -> set[Path]:
    if not work_root.is_dir():
        return set()
    return {
        work_root / e.name
        for e in os.scandir(work_root)
        if _BUCKET.match(e.name) and _bucket_end(e.name) <= now
    }


def in_use(material: list[ObjectInfo], now: datetime, policy: RetentionPolicy) -> bool:
    """A run wrote some of it within lease + short clock (a rerun under the same key)."""
    since = (now - policy.unfinished_hold).timestamp()
    return any(o.modified > since for o in material)


def sweep_working_material(
    store: Store, now: datetime, policy: RetentionPolicy, stats: JanitorPass
) -> None:
    for entry in list(deadlines.due(store, deadlines.WORK, now)):
        stats.entries_due += 1
        material = revision_material(store, entry.report_id, entry.revision)
        if material and in_use(material, now, policy):
            stats.in_use.add(entry.revision)
            continue  # keep the entry: look again on a later pass
        event = deletion_log.delete_audited(
            store, "working_material", entry.report_id, entry.revision, entry.deadline, now,
            material,
        )  # fmt: skip
        if event:
            stats.deletions.append(event)
        store.delete(entry.key)


def expire_revision(
    store: Store, report_id: str, revision: str, deadline: datetime, now: datetime,
    kind: str = "archive", successor: str = "",
) -> Deletion | None:  # fmt: skip
    """Delete an archived revision's objects; its manifest stays as a tombstone (`expired`).
    `kind`: the audit event's (`superseded`: another revision replaced it as the month's, and
    the tombstone names that `successor`)."""
    key = manifest_key(report_id, revision)
    objects = [o for o in store.list(archive_prefix(report_id, revision)) if o.key != key]
    event = deletion_log.delete_audited(store, kind, report_id, revision, deadline, now, objects)
    manifest = store_json.read_manifest(store, key)
    if manifest and manifest.state != "expired":
        size = sum(o.size for o in objects)
        tomb = tombstone(manifest, iso(now), size, len(objects), successor)
        store_json.write_manifest(store, key, tomb)
    return event


def sweep_archive(store: Store, now: datetime, stats: JanitorPass) -> None:
    for entry in list(deadlines.due(store, deadlines.ARCHIVE, now)):
        stats.entries_due += 1
        deadline = published_deadline(store, entry.report_id, entry.revision) or entry.deadline
        if deadline > now:  # the marker is not the published deadline: the manifest rules
            deadlines.record(store, deadlines.ARCHIVE, deadline, entry.report_id, entry.revision)
            if keys.deadline_key(deadlines.ARCHIVE, deadline, entry.report_id,
                                 entry.revision) != entry.key:  # fmt: skip
                store.delete(entry.key)
            continue
        event = expire_revision(store, entry.report_id, entry.revision, deadline, now)
        if event:
            stats.deletions.append(event)
        store.delete(entry.key)


def published_deadline(store: Store, report_id: str, revision: str) -> datetime | None:
    """The archive deadline the revision's manifest publishes, if it has one. A marker can
    disagree with it: a run killed before its manifest left a marker of its own deadline, and
    the rerun published another; and a marker keeps its deadline's minute only. The archive is
    deleted at the published deadline, never before it."""
    manifest = store_json.read_manifest(store, manifest_key(report_id, revision))
    if manifest is None or manifest.state == "expired":
        return None
    return parse_iso(manifest.deadlines.archive_delete_by)


def sweep_rejected_evidence(store: Store, now: datetime, stats: JanitorPass) -> None:
    """Evidence of rejected images kept less than the archive (core/retention/rejected.py)."""
    for entry in list(deadlines.due(store, deadlines.EVIDENCE, now)):
        stats.entries_due += 1
        event = rejected.expire_rejected_evidence(
            store, entry.report_id, entry.revision, entry.deadline, now
        )  # fmt: skip
        if event:
            stats.deletions.append(event)
        store.delete(entry.key)


def sweep_untracked(
    store: Store, now: datetime, policy: RetentionPolicy, stats: JanitorPass
) -> None:
    """Expired staged/work objects the index did not lead to (run after the index's sweep)."""
    for found in list(untracked.overdue(store, now, policy)):
        if found.revision in stats.in_use:
            continue  # the index's sweep keeps it for a run (its archive part is newer)
        event = deletion_log.delete_audited(
            store, found.kind, found.report_id, found.revision, found.deadline, now, found.objects
        )
        if event:
            stats.deletions.append(event)


def abandoned_writes(
    store: Store, now: datetime, policy: RetentionPolicy
) -> Iterator[tuple[ObjectInfo, str, datetime]]:
    """(partial write, its random name, deadline) for every write left half-done: no write lasts
    longer than a run's lease, so one untouched for lease + short clock was abandoned."""
    for item in store.abandoned_writes((now - policy.unfinished_hold).timestamp()):
        name = item.key.rsplit("/", 1)[-1]
        yield item, name, datetime.fromtimestamp(item.modified, UTC) + policy.unfinished_hold


def sweep_abandoned_writes(
    store: Store, now: datetime, policy: RetentionPolicy, stats: JanitorPass
) -> None:
    for item, name, deadline in list(abandoned_writes(store, now, policy)):
        event = deletion_log.deletion("partial_write", name, "", "", deadline, now, item.size, 1)
        deletion_log.record(store, event)  # before the deletion, as every event
        store.delete_abandoned([item.key])
        stats.deletions.append(event)


def sweep_host(store: Store, work_root: Path, now: datetime) -> JanitorPass:
    """This host's workdirs only, each deletion audited in the store: the part of a pass that
    must run on every worker host (report_pipeline/host_janitor.py), since workdirs live on
    local disk."""
    stats = JanitorPass()
    sweep_workdirs(work_root, now, stats, lambda event: deletion_log.record(store, event))
    return stats


def run(store: Store, work_root: Path, now: datetime, policy: RetentionPolicy) -> JanitorPass:
    """One janitor pass at `now` (an injectable clock)."""
    stats = sweep_host(store, work_root, now)
    sweep_working_material(store, now, policy, stats)
    sweep_untracked(store, now, policy, stats)
    sweep_archive(store, now, stats)
    sweep_rejected_evidence(store, now, stats)
    sweep_abandoned_writes(store, now, policy, stats)
    return stats

"""The janitor benchmark's fixture: a retention state built with the core's own functions.

Archived revisions as `archive.publish` leaves them (plan, children record, images, manifest and
an ARCHIVE deadline marker) and crashed working directories as `private_workdir` leaves them when
the worker dies before its `finally` (hour bucket, 0700 `w-<minute>-<hex>`, lease.json, one file).
Exactly the wanted share of each is due at `now`; the rest is due later.
"""

from __future__ import annotations

import hashlib
import random
import secrets
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from bench.common import BenchError
from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.intake.intake import report_id_for
from report_pipeline.core.model import store_json
from report_pipeline.core.model.clock import deadlines_for, iso, parse_iso
from report_pipeline.core.model.keys import children_key
from report_pipeline.core.model.messages import RevisionRef
from report_pipeline.core.model.records import ChildRecord
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.plan.record import Plan, write_plan
from report_pipeline.core.retention import deadlines
from report_pipeline.core.retention.janitor import JanitorPass
from report_pipeline.core.scratch.workdir import (
    LEASE_FILE,
    create_workdir,
    new_lease,
    private_file,
    private_root,
)
from report_pipeline.core.storage.local_store import LocalStore

MONTHS = [f"{y}-{m:02d}" for y in (2025, 2026) for m in range(1, 13)][:22]  # 2025-01..2026-10
EXPECTED = {1: 2, 2: 1}  # three image occurrences on two pages
TASK_KEY = "pages_0001_0002"
OBJECTS = 6  # per revision: manifest, plan, children record, three images
PNG = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Spread:
    """Where deadlines fall: due ones in (now - past, now - 1 min), the rest in
    (now + 2 min, now + future), uniformly; one window per kind of item."""

    work_past: timedelta = timedelta(hours=48)
    work_future: timedelta = timedelta(hours=72)
    archive_past: timedelta = timedelta(days=7)
    archive_future: timedelta = timedelta(days=400)


@dataclass
class State:
    store: LocalStore
    work_root: Path
    due_workdirs: list[Path]
    kept_workdirs: list[Path]
    due_revisions: list[RevisionRef]
    kept_revisions: list[RevisionRef]


def _flags(total: int, due: int, rng: random.Random) -> list[bool]:
    flags = [True] * due + [False] * (total - due)
    rng.shuffle(flags)
    return flags


def _deadline(now: datetime, due: bool, past: timedelta, future: timedelta, rng) -> datetime:
    if due:
        return now - timedelta(seconds=rng.uniform(60, past.total_seconds()))
    return now + timedelta(seconds=rng.uniform(120, future.total_seconds()))


def crashed_workdir(work_root: Path, removable: datetime, policy: RetentionPolicy) -> Path:
    """A workdir whose worker died before `finally`, removable from `removable` (lease end)."""
    owner = f"{secrets.token_hex(8)}/extract_pages"
    lease = new_lease(owner, removable - timedelta(minutes=policy.lease_minutes),
                      policy.lease_minutes, policy.work_minutes)  # fmt: skip
    directory = create_workdir(work_root, lease)
    private_file(directory, ".pdf").write_bytes(secrets.token_bytes(512))
    return directory


def _child(page: int, index: int, data: bytes, ref: RevisionRef, at: str) -> ChildRecord:
    digest = hashlib.sha256(data).hexdigest()
    return ChildRecord(
        sequence=0, page=page, index=index, state="archived", attempts=1,
        validated_first_attempt=True, queued_at=at, started_at=at, finished_at=at,
        content_hash=digest, width=64, height=48, format="png", mode="RGB",
        bytes=len(data), stream_bytes=len(data), declared_type="DCTDecode",
        signature="png", quarantine_reason=None, quarantine_detail=None,
        object_key=ref.image_key(digest), cleanup_lease=at, origin="xobject", xref=10 + index,
    )  # fmt: skip


def archived_revision(store: LocalStore, ref: RevisionRef, archive_by: datetime,
                      policy: RetentionPolicy, rng: random.Random) -> None:  # fmt: skip
    """A complete revision as `publish` leaves it, expiring at `archive_by`."""
    archived_at = archive_by - timedelta(days=policy.archive_days)
    at = iso(archived_at)
    images = [PNG + rng.randbytes(rng.randint(200, 400)) for _ in range(3)]
    places = [(page, i) for page, count in EXPECTED.items() for i in range(count)]
    records = [_child(p, i, data, ref, at) for (p, i), data in zip(places, images, strict=True)]
    write_plan(store, ref, Plan(EXPECTED, {}, at, ()))
    for record, data in zip(records, images, strict=True):
        store.put_bytes(record.object_key, data)
    children = children_key(ref.report_id, ref.revision, TASK_KEY)
    store_json.write_children(store, children, records)
    manifest = mf.build_manifest(ref, EXPECTED, mf.sequenced(records),
                                 deadlines_for(archived_at, policy), at)  # fmt: skip
    store_json.write_manifest(store, ref.manifest_key, manifest)
    expires = parse_iso(manifest.deadlines.archive_delete_by)
    deadlines.record(store, deadlines.ARCHIVE, expires, ref.report_id, ref.revision)


def _ref(n: int) -> RevisionRef:
    month = MONTHS[n % len(MONTHS)]
    return RevisionRef(
        report_id_for("inbox", month), month, secrets.token_hex(32), "1", secrets.token_hex(10)
    )


def build(root: Path, sizes: tuple[int, int, float], now: datetime, spread: Spread,
          policy: RetentionPolicy, seed: int) -> State:  # fmt: skip
    """`sizes` = (workdirs, revisions, expired share); the due counts are rounded."""
    workdirs, revisions, share = sizes
    rng = random.Random(seed)
    state = State(LocalStore(root / "store"), private_root(root / "work"), [], [], [], [])
    for due in _flags(workdirs, round(workdirs * share), rng):
        removable = _deadline(now, due, spread.work_past, spread.work_future, rng)
        path = crashed_workdir(state.work_root, removable, policy)
        (state.due_workdirs if due else state.kept_workdirs).append(path)
    for n, due in enumerate(_flags(revisions, round(revisions * share), rng)):
        ref = _ref(n)
        expires = _deadline(now, due, spread.archive_past, spread.archive_future, rng)
        archived_revision(state.store, ref, expires, policy, rng)
        (state.due_revisions if due else state.kept_revisions).append(ref)
    return state


def check_first(state: State, sweep: JanitorPass) -> None:
    """Exactly the due items went, as audited deletions; tombstones and the rest stay."""
    kinds = Counter(d.kind for d in sweep.deletions)
    want = Counter(workdir=len(state.due_workdirs), archive=len(state.due_revisions))
    if kinds != +want:
        raise BenchError(f"first pass deleted {dict(kinds)}, expected {dict(+want)}")
    gone = {d.item for d in sweep.deletions if d.kind == "workdir"}
    if gone != {p.name for p in state.due_workdirs} or any(p.exists() for p in state.due_workdirs):
        raise BenchError("the workdirs deleted are not exactly the due ones")
    if not all((p / LEASE_FILE).is_file() for p in state.kept_workdirs):
        raise BenchError("a workdir that is not due was touched")
    for ref in state.due_revisions:
        keys = [o.key for o in state.store.list(ref.archive_prefix)]
        manifest = store_json.read_manifest(state.store, ref.manifest_key)
        if keys != [ref.manifest_key] or manifest is None or manifest.state != "expired":
            raise BenchError(f"revision {ref.revision} did not expire into a tombstone")
    for ref in state.kept_revisions:
        if len(list(state.store.list(ref.archive_prefix))) != OBJECTS:
            raise BenchError(f"revision {ref.revision} is not due but lost objects")


def check_second(sweep: JanitorPass) -> None:
    if sweep.deletions:
        raise BenchError(f"second pass deleted {len(sweep.deletions)} items: not idempotent")

"""The retention audit: four checks computed from the store (and the workers' disk), not from
the asset's data. Overdue means past a deadline by more than `grace` (the janitor runs every
few minutes, so a fresh deadline is not yet a failure)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from report_pipeline.core.archive import keys, store_json
from report_pipeline.core.archive.keys import archive_prefix, manifest_key, plan_key
from report_pipeline.core.archive.records import Manifest
from report_pipeline.core.retention import audit, deadlines, janitor, untracked
from report_pipeline.core.retention.retention import iso, parse_iso
from report_pipeline.core.settings import RetentionPolicy
from report_pipeline.core.storage.parallel_io import map_io
from report_pipeline.core.storage.store import Store

DEFAULT_GRACE = timedelta(minutes=10)


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Overdue:
    items: list[tuple[str, datetime, int]] = field(default_factory=list)

    def add(self, item: str, deadline: datetime, size: int) -> None:
        self.items.append((item, deadline, size))

    def metadata(self) -> dict[str, Any]:
        oldest = min(self.items, key=lambda i: i[1], default=None)
        return {
            "overdue_items": len(self.items),
            "overdue_bytes": sum(i[2] for i in self.items),
            "oldest_overdue_item": oldest[0] if oldest else "",
            "oldest_overdue_deadline": iso(oldest[1]) if oldest else "",
        }


def work_material_deleted_by_deadline(
    store: Store, work_root: Path, now: datetime, policy: RetentionPolicy, grace: timedelta
) -> CheckOutcome:
    """Bytes of working material retained past the short clock (plus grace) must be zero: what
    the index leads to, what a listing of `staged/` and `work/` finds without it, workdirs, and
    writes a crashed writer left half-done."""
    cutoff, overdue, seen = now - grace, _Overdue(), set()
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
    for item, deadline in janitor.abandoned_writes(store, cutoff, policy):
        overdue.add(f"partial write {item.key.rsplit('/', 1)[-1]}", deadline, item.size)
    passed = not overdue.items
    text = "no working material past its deadline" if passed else "working material is overdue"
    metadata = {**overdue.metadata(), "untracked_items": len(untracked_items),
                "untracked_bytes": sum(u.bytes for u in untracked_items)}  # fmt: skip
    return CheckOutcome("work_material_deleted_by_deadline", passed, text, metadata)


def archive_within_retention(store: Store, now: datetime, grace: timedelta) -> CheckOutcome:
    """Nothing archived may be retained past the long clock (plus grace)."""
    overdue = _Overdue()
    for entry in deadlines.due(store, deadlines.ARCHIVE, now - grace):
        prefix = archive_prefix(entry.report_id, entry.revision)
        manifest = manifest_key(entry.report_id, entry.revision)
        kept = [o for o in store.list(prefix) if o.key != manifest]
        if kept:
            overdue.add(f"revision {entry.revision}", entry.deadline, sum(o.size for o in kept))
    passed = not overdue.items
    text = "no archived revision past its deadline" if passed else "archived data is overdue"
    return CheckOutcome("archive_within_retention", passed, text, overdue.metadata())


def revisions(store: Store, month: str | None = None) -> list[tuple[str, str]]:
    """Every archived revision, or only those of one month's reports."""
    reports = [
        r
        for r in store.list_prefixes(keys.ARCHIVE)
        if not month or keys.in_month(keys.prefix_name(r), month)
    ]
    return [
        (keys.prefix_name(report), keys.prefix_name(revision))
        for report in reports
        for revision in store.list_prefixes(report)
    ]


@dataclass(frozen=True)
class Revision:
    """One archived revision as the audit sees it, read once for both per-revision checks."""

    revision: str
    prefix: str
    manifest: Manifest | None  # its manifest, if it has one
    deadline: datetime | None  # an unfinished revision's short-clock deadline (from its plan)

    @property
    def finished(self) -> bool:
        return self.manifest is not None and self.manifest.state in {"complete", "expired"}

    def overdue(self, now: datetime) -> bool:
        """Unfinished, and no longer allowed to be in progress."""
        return not self.finished and (self.deadline is None or self.deadline <= now)


def read_revisions(
    store: Store, policy: RetentionPolicy, month: str | None = None
) -> list[Revision]:
    found = []
    for report_id, revision in revisions(store, month):
        manifest = store_json.read_manifest(store, manifest_key(report_id, revision))
        rev = Revision(revision, archive_prefix(report_id, revision), manifest, None)
        if not rev.finished:
            deadline = _plan_deadline(store, plan_key(report_id, revision), policy)
            rev = replace(rev, deadline=deadline)
        found.append(rev)
    return found


def _plan_deadline(store: Store, key: str, policy: RetentionPolicy) -> datetime | None:
    if not store.exists(key):
        return None
    queued = parse_iso(json.loads(store.get_bytes(key, store_json.JSON_CAP))["queued_at"])
    return queued + policy.unfinished_hold


def manifest_complete(found: list[Revision], store: Store, now: datetime) -> CheckOutcome:
    """archived + quarantined = expected for every revision (runs still within their lease are
    in progress, not incomplete)."""
    problems = []
    for rev in (r for r in found if r.overdue(now)):
        counts = rev.manifest.counts if rev.manifest else None
        expected, accounted = (counts.expected, counts.accounted) if counts else (None, None)
        size = sum(o.size for o in store.list(rev.prefix))
        problems.append((rev.revision, expected, accounted, size, rev.deadline))
    oldest = min(problems, key=lambda p: p[4] or now, default=None)
    return CheckOutcome(
        "manifest_complete", not problems,
        "every revision accounts for all its images" if not problems
        else "some revisions do not account for every image",
        {"revisions_checked": len(found), "incomplete_revisions": len(problems),
         "incomplete_bytes": sum(p[3] for p in problems),
         "first_incomplete": problems[0][0] if problems else "",
         "first_incomplete_expected_accounted": str(problems[0][1:3]) if problems else "",
         "oldest_overdue_item": f"revision {oldest[0]}" if oldest else "",
         "oldest_overdue_deadline": iso(oldest[4]) if oldest and oldest[4] else ""},
    )  # fmt: skip


@dataclass(frozen=True)
class _Expected:
    sha256: str  # an image's content hash, or the hash quarantine evidence is named by
    size: int | None  # None: not recorded
    md5: str | None  # of the bytes uploaded, recorded at upload; None in older manifests


def _listed(manifest: Manifest) -> dict[str, _Expected]:
    """Object key -> what it must hold, for every object the manifest lists."""
    listed = {}
    for child in manifest.children:
        key, md5 = child.object_key, child.md5
        if key and child.state == "archived":
            listed[key] = _Expected(child.content_hash, child.bytes, md5)
        elif key and child.state == "quarantined":
            listed[key] = _Expected(keys.parse_archive_key(key).digest, child.stream_bytes, md5)
    return listed


# What `archive_matches_manifest` compared, per object (its metadata counts each).
BY_LISTING = "objects_matched_by_listing"  # S3: listed ETag = MD5 recorded at upload, and size
BY_BYTES = "objects_rehashed"  # the bytes read back and their sha256 computed


def verify_revision(store: Store, prefix: str, manifest: Manifest, tally: dict) -> None:
    """Every listed object is present and holds its bytes; nothing unlisted is stored.

    An object whose listing carries an MD5 (S3: the ETag of a single-part SSE-S3 upload, which
    S3 computed from the stored bytes after checking them against the Content-MD5 sent) is
    matched by that MD5 and its size against the manifest's record of the upload: no read. Every
    other object (LocalStore, manifests without MD5s, and any listing that disagrees) is read
    back and its sha256 computed: a disagreeing ETag is never a pass, nor a failure on its own.
    """
    listed = {} if manifest.state == "expired" else _listed(manifest)
    stored = {keys.IMAGES, keys.QUARANTINE}
    present = {o.key: o for o in store.list(prefix) if keys.parse_archive_key(o.key).kind in stored}
    tally["missing"] += [key for key in listed if key not in present]
    found = [key for key in listed if key in present]

    def matches_listing(key: str) -> bool:
        want, info = listed[key], present[key]
        return bool(want.md5) and info.md5 == want.md5 and info.size == want.size

    by_listing = [key for key in found if matches_listing(key)]
    reread = [key for key in found if not matches_listing(key)]

    def read(key: str) -> tuple[int, str]:  # the bytes themselves
        data = store.get_bytes(key, present[key].size)
        return len(data), hashlib.sha256(data).hexdigest()

    for key, (size, digest) in zip(reread, map_io(store, read, reread), strict=True):
        tally["bytes_verified"] += size
        if digest != listed[key].sha256:
            tally["mismatched"].append(key)
    tally["bytes_verified"] += sum(present[key].size for key in by_listing)
    tally[BY_LISTING] = tally.get(BY_LISTING, 0) + len(by_listing)
    tally[BY_BYTES] = tally.get(BY_BYTES, 0) + len(reread)
    tally["orphans"] += [k for k in present if k not in listed]
    tally["objects_verified"] += len(listed)


def compared(tally: dict[str, Any]) -> dict[str, Any]:
    """The check's metadata on how objects were compared (see `verify_revision`)."""
    listing, rehashed = tally.get(BY_LISTING, 0), tally.get(BY_BYTES, 0)
    ways = []
    if listing:
        ways.append(f"{listing} by the listing's ETag (the MD5 S3 checked at upload) and size")
    if rehashed:
        ways.append(f"{rehashed} by reading the bytes back and hashing them (sha256)")
    return {BY_LISTING: listing, BY_BYTES: rehashed,
            "compared": "; ".join(ways) or "no objects"}  # fmt: skip


def archive_matches_manifest(found: list[Revision], store: Store, now: datetime) -> CheckOutcome:
    """Every listed object exists with its hash; no object is left that no manifest lists."""
    tally: dict[str, Any] = {"missing": [], "mismatched": [], "orphans": [],
                             "objects_verified": 0, "bytes_verified": 0}  # fmt: skip
    for rev in found:
        if rev.finished:
            verify_revision(store, rev.prefix, rev.manifest, tally)
        elif rev.overdue(now):  # an unfinished revision past its deadline: all of it is orphaned
            tally["orphans"] += [o.key for o in store.list(rev.prefix)]
    bad = tally["missing"] + tally["mismatched"] + tally["orphans"]
    return CheckOutcome(
        "archive_matches_manifest", not bad,
        "archive and manifests agree" if not bad else "archive and manifests disagree",
        {"objects_verified": tally["objects_verified"], "bytes_verified": tally["bytes_verified"],
         "missing_objects": len(tally["missing"]), "hash_mismatches": len(tally["mismatched"]),
         "orphan_objects": len(tally["orphans"]), "first_problem": bad[0] if bad else "",
         **compared(tally)},
    )  # fmt: skip


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
    lag = audit.lag_summary(store, now)
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

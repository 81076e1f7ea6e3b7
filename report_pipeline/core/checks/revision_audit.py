"""The two per-revision checks, read from the store: every revision accounts for all its images
(`manifest_complete`), and the archive holds exactly what the manifests list
(`archive_matches_manifest`). Run per month on `report_manifest` and in `audit_all`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from report_pipeline.core.archive.months import revisions
from report_pipeline.core.checks.check_outcome import CheckOutcome
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.keys import archive_prefix, manifest_key, plan_key
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.plan.record import queued_at
from report_pipeline.core.storage.parallel_io import map_io
from report_pipeline.core.storage.store import Store


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
    queued = parse_iso(queued_at(store.get_bytes(key, store_json.JSON_CAP)))
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

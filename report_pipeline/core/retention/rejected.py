"""Evidence of rejected images kept less than the archive clock (`rejected_evidence_days`):
at its deadline the janitor deletes the evidence of the month's current revision (following the
revisions later reviews made, `reviews/next/...`), audited, and records in that manifest that it
is gone, so the archive check does not look for it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from report_pipeline.core.model import current as current_record
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.records import ChildRecord, Manifest
from report_pipeline.core.retention import deletion_log
from report_pipeline.core.retention.deletion_log import Deletion
from report_pipeline.core.storage.store import MissingObject, ObjectInfo, Store

KIND = "rejected_evidence"


def current(store: Store, report_id: str, revision: str) -> Manifest | None:
    """The revision's manifest, or, while superseded, that of the revision that replaced it (a
    review's, a correction's or a re-extraction's: the tombstone names it)."""
    for _ in range(10_000):  # a chain of revisions; never a loop (each names a newer one)
        manifest = store_json.read_manifest(store, keys.manifest_key(report_id, revision))
        if manifest is None or manifest.state != "expired":
            return manifest
        if manifest.superseded_by:
            report_id, revision = _successor(store, manifest)
            continue
        try:  # a tombstone a review left before tombstones named their successor
            revision = store.get_bytes(keys.review_successor_key(report_id, revision), 64).decode()
        except MissingObject:
            return None  # expired by the archive clock: nothing left to delete
    return None


def _successor(store: Store, manifest: Manifest) -> tuple[str, str]:
    """(report id, revision) of the revision that superseded `manifest`: the month's record
    names its report (a correction may come from another source)."""
    for head in current_record.history(store, manifest.month):
        if head.revision == manifest.superseded_by:
            return head.report_id, head.revision
    return manifest.report_id, manifest.superseded_by or ""


def _due(child: ChildRecord, now: datetime) -> bool:
    review = child.review
    if not (child.object_key and review and review.decision == "rejected"):
        return False
    return bool(review.evidence_delete_by) and parse_iso(review.evidence_delete_by) <= now


def expire_rejected_evidence(
    store: Store, report_id: str, revision: str, deadline: datetime, now: datetime
) -> Deletion | None:
    manifest = current(store, report_id, revision)
    if manifest is None:
        return None
    due = {c.object_key: max(c.stream_bytes, 0) for c in manifest.children if _due(c, now)}
    if not due:
        return None
    objects = [ObjectInfo(key, size) for key, size in due.items()]
    event = deletion_log.delete_audited(
        store, KIND, report_id, manifest.parent_revision, deadline, now, objects
    )  # fmt: skip
    said = f"evidence deleted {iso(now)} (rejected; review rejected_evidence_days)"
    children = [
        replace(c, object_key=None, md5=None,
                quarantine_detail=f"{c.quarantine_detail or ''}; {said}".lstrip("; "))
        if c.object_key in due else c
        for c in manifest.children
    ]  # fmt: skip
    key = keys.manifest_key(report_id, manifest.parent_revision)
    store_json.write_manifest(store, key, replace(manifest, children=tuple(children)))
    return event

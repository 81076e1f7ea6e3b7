"""A reviewer's decision on one quarantined object, published as a new revision of its month.

reject: the object stays quarantined, marked `rejected`. accept: the one check it failed is
lifted for it alone, up to the review ceilings, its evidence is decoded in a confined child and
normalized to PNG, and it is archived, marked `accepted` with the check lifted. If that decode
fails too, it stays quarantined with the reason added, undecided.

Either way the month gets a new revision (`previous_revision` names the one decided on): its
objects are copied under the new revision's prefix (nothing is re-extracted), it keeps the
archive deadline of the revision it revises (a review never extends the archive clock), and
`reviews/next/...` is written once per revision, so two reviewers cannot fork the month. Every
decision is an audit event without image bytes. Deciding again the same way changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from report_pipeline.core.archive import succession
from report_pipeline.core.archive.manifest import revised
from report_pipeline.core.archive.months import Current
from report_pipeline.core.archive.table import write_table
from report_pipeline.core.model import current as month_record
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.records import ChildRecord, Manifest, PageRow, Review
from report_pipeline.core.model.settings import DecodeSettings, ReviewSettings
from report_pipeline.core.retention import deadlines
from report_pipeline.core.review import confined
from report_pipeline.core.review.queue import Item, ReviewError, find, month_now
from report_pipeline.core.review.request import DECISIONS, check_request
from report_pipeline.core.storage.store import MissingObject, Store

# The checks an accept may lift: the quarantine reason -> what is lifted (up to the ceilings)
LIFTABLE = {
    "pixel_cap_exceeded": "pixel cap",
    "dimensions_exceed_cap": "side cap",
    "signature_mismatch": "signature check",
    "dimension_mismatch": "declared-size check",
}


@dataclass(frozen=True)
class Decided:
    month: str
    sequence: int
    decision: str  # accepted | rejected | accept_failed
    reviewer: str
    revision: str  # the month's revision now
    previous_revision: str
    changed: bool  # False: the same decision was already recorded
    reason: str = ""  # accept_failed: why the evidence still does not pass
    manifest: Manifest | None = None  # the month's manifest now (the new revision's)
    page: int = 0  # a decision on a damaged page (core/review/pages.py): its number


def decide(
    store: Store, month: str, sequence: int, decision: str, reviewer: str, note: str,
    now: datetime, review: ReviewSettings | None = None, decode: DecodeSettings | None = None,
    expected_revision: str = "",
) -> Decided:  # fmt: skip
    review, decode = review or ReviewSettings(), decode or DecodeSettings()
    reviewer = check_request(month, decision, reviewer, note, review)  # as recorded (NFC)
    found = month_now(store, month, expected_revision)
    manifest = found.manifest
    assert manifest is not None
    previous = manifest.parent_revision
    item = find(manifest, sequence)
    wanted = DECISIONS[decision]
    if item.decision:
        if item.decision == wanted:
            succession.settle(store, manifest, now)  # a decision that died before it finished
            return Decided(month, item.sequence, wanted, reviewer, previous,
                           manifest.previous_revision or previous, False, "",
                           manifest)  # fmt: skip
        raise ReviewError("already_decided", f"image {item.sequence} of {month} was "
                          f"{item.decision}; a contrary decision is refused")  # fmt: skip
    evidence = keys.parse_archive_key(item.evidence_key).digest if item.evidence_key else ""
    mark = Review(wanted, reviewer, iso(now), note, "", previous, evidence=evidence)
    evidence_by = _evidence_deadline(manifest, now, review) if decision == "reject" else None
    if evidence_by is not None:
        mark = replace(mark, evidence_delete_by=iso(evidence_by))
    png, reason = b"", ""
    if decision == "accept":
        png, mark, reason = _accept(store, item, mark, review, decode)
        if reason and f"accept failed: {reason}" in item.detail:  # tried before: no new revision
            return Decided(month, item.sequence, "accept_failed", reviewer, previous,
                           manifest.previous_revision or previous, False, reason,
                           manifest)  # fmt: skip
    token = f"{item.sequence}\n{decision}\n{reason}"
    revision = hashlib.sha256(f"{previous}\n{token}".encode()).hexdigest()[:20]
    image_key = ""
    if png:
        image_key = keys.image_key(manifest.report_id, revision, hashlib.sha256(png).hexdigest())
    children = [_decided(c, item, mark, png, image_key, reason) for c in manifest.children]
    new = publish(store, found, children, revision, png, image_key, now, evidence_by)
    outcome = "accept_failed" if reason else wanted
    _audit(store, manifest, item, outcome, mark, revision, reason, now)
    return Decided(month, item.sequence, outcome, reviewer, revision, previous, True, reason, new)


def _accept(
    store: Store, item: Item, mark: Review, review: ReviewSettings, decode: DecodeSettings
) -> tuple[bytes, Review, str]:
    if item.reason not in LIFTABLE:
        raise ReviewError("cannot_accept", f"image {item.sequence} was quarantined as "
                          f"{item.reason}, which no lifted check makes whole: reject "
                          "it")  # fmt: skip
    if not item.evidence_key:
        raise ReviewError("cannot_accept", f"image {item.sequence} has no evidence to decode")
    try:
        evidence = store.get_bytes(item.evidence_key, review.max_image_stream_bytes)
    except MissingObject:
        raise ReviewError("cannot_accept", f"image {item.sequence}'s evidence is gone "
                          "(expired or deleted)") from None  # fmt: skip
    caps = confined.Caps(review.max_image_pixels, review.max_image_side)
    result = confined.decode(evidence, caps, decode, decode.image_seconds)
    if not result.ok:
        return b"", mark, f"{result.reason}: {result.detail}"
    return result.png, replace(mark, lifted=item.reason), ""


def _decided(
    child: ChildRecord, item: Item, mark: Review, png: bytes, image_key: str, reason: str
) -> ChildRecord:
    if child.sequence not in item.sequences:
        return child
    if reason:  # the accept's decode failed too: still quarantined, undecided, reason added
        detail = f"{child.quarantine_detail or ''}; accept failed: {reason}".lstrip("; ")
        return replace(child, quarantine_detail=detail)
    if not png:
        return replace(child, review=mark)
    return replace(
        child, state="archived", content_hash=hashlib.sha256(png).hexdigest(), format="png",
        mode=None, bytes=len(png), object_key=image_key,
        md5=hashlib.md5(png, usedforsecurity=False).hexdigest(),
        quarantine_reason=None, quarantine_detail=None, review=mark,
    )  # fmt: skip


def _evidence_deadline(manifest: Manifest, now: datetime, review: ReviewSettings):
    """When a rejected image's evidence goes, if `rejected_evidence_days` makes that sooner than
    the month's archive deadline (else None: it keeps the archive clock)."""
    if not review.rejected_evidence_days:
        return None
    by = now + timedelta(days=review.rejected_evidence_days)
    return by if by < parse_iso(manifest.deadlines.archive_delete_by) else None


def publish(
    store: Store, found: Current, children: list[ChildRecord], revision: str, png: bytes,
    image_key: str, now: datetime, evidence_by: datetime | None = None,
    pages: tuple[PageRow, ...] = (),
) -> Manifest:  # fmt: skip
    """The new revision's objects, deadline marker, manifest and table, then the month's record
    names it: its manifest. `pages`: the page rows a decision on a page changed (else the
    revision's own)."""
    manifest = found.manifest
    assert manifest is not None
    lock = keys.review_successor_key(manifest.report_id, manifest.parent_revision)
    taken = not store.put_if_absent(lock, revision.encode())
    if taken and store.get_bytes(lock, 64).decode() != revision:
        raise ReviewError("revision_changed", f"{manifest.month} was revised by another "
                          "decision meanwhile: list the queue again")  # fmt: skip
    # the long clock's marker before any object: a decision that dies half-way leaves nothing
    # the janitor would not delete at the month's deadline
    archive_by = parse_iso(manifest.deadlines.archive_delete_by)
    deadlines.record(store, deadlines.ARCHIVE, archive_by, manifest.report_id, revision)
    if evidence_by is not None:  # a rejected image's evidence, kept less than the archive
        deadlines.record(store, deadlines.EVIDENCE, evidence_by, manifest.report_id, revision)
    if image_key:  # the accepted PNG, with the MD5 its records carry
        md5 = next(c.md5 for c in children if c.object_key == image_key)
        store.put_if_absent(image_key, png, md5 or "")
    moved = [_moved(store, c, manifest.report_id, revision) for c in children]
    new = revised(replace(manifest, pages=pages or manifest.pages), moved, revision, iso(now))
    store_json.write_manifest(store, keys.manifest_key(manifest.report_id, revision), new)
    write_table(store, new)
    _make_current(store, found, new, now)
    # The revision decided on is superseded: its copies go now, with an audit event, and its
    # manifest stays as a tombstone (the archive holds one copy of the month, not one per review)
    succession.supersede(store, manifest, revision, now)
    return new


def _make_current(store: Store, found: Current, new: Manifest, now: datetime) -> None:
    """The month's record names the review's revision, if the month is still at the revision
    decided on; else (a correction landed meanwhile) the review's revision goes again."""
    head, decided_on = found.head, found.manifest
    if head is None:  # a month archived before records were kept: its revision, adopted
        adopted = replace(succession.head_for(decided_on, None, now), cause="adopted")
        month_record.advance(store, None, adopted)
        head = month_record.head(store, new.month)
    if head is not None and head.revision == new.parent_revision:
        return  # recorded by an earlier try of this decision
    if (
        head is None
        or head.revision != decided_on.parent_revision
        or not month_record.advance(store, head, succession.head_for(new, decided_on, now))
    ):
        now_current = month_record.head(store, new.month)
        succession.supersede(store, new, now_current.revision if now_current else "", now)
        raise ReviewError("revision_changed", f"{new.month} changed while this decision was "
                          "taken: list the queue again")  # fmt: skip


def _moved(store: Store, child: ChildRecord, report_id: str, revision: str) -> ChildRecord:
    """`child` with its object under the new revision (copied there once)."""
    if not child.object_key:
        return child
    old = keys.parse_archive_key(child.object_key)
    if old.revision == revision:
        return child
    key = f"{keys.archive_prefix(report_id, revision)}/{old.kind}/{old.name}"
    store.copy(child.object_key, key)  # inside the store (S3: CopyObject); again: unchanged
    return replace(child, object_key=key)


def _audit(
    store: Store, manifest: Manifest, item: Item, outcome: str, mark: Review, revision: str,
    reason: str, now: datetime,
) -> None:  # fmt: skip
    event = {
        "event": "quarantine_decision", "month": manifest.month, "report_id": manifest.report_id,
        "from_revision": manifest.parent_revision, "revision": revision,
        "sequence": item.sequence, "sequences": list(item.sequences),
        "object": keys.parse_archive_key(item.evidence_key).digest if item.evidence_key else "",
        "quarantine_reason": item.reason, "decision": outcome, "reviewer": mark.reviewer,
        "decided_at": mark.decided_at, "note": mark.note, "lifted": mark.lifted,
        "failed": reason,
    }  # fmt: skip
    key = keys.review_event_key(now, secrets.token_hex(6))
    store.put_bytes(key, json.dumps(event, sort_keys=True).encode())


def events(store: Store) -> list[dict]:
    """Every decision recorded, oldest first."""
    found = []
    for day in store.list_prefixes(f"{keys.REVIEWS}/events"):
        for info in store.list(day):
            found.append(json.loads(store.get_bytes(info.key, 1 << 20)))
    return sorted(found, key=lambda e: e["decided_at"])

"""Review decisions carry over to the month's next revision.

When a corrected report or a newer extractor replaces the month's revision, a quarantined image
of the new revision that is the same object as a decided one (the same evidence bytes, by
sha256, quarantined for the same reason) keeps that decision: a rejected image stays rejected,
an accepted one is archived with the PNG the decision made (copied inside the store, not decoded
again). Nobody decides twice. An image quarantined for another reason, or with other bytes, is
a new question and waits for a reviewer.

A damaged page (a page-level quarantine, core/review/pages.py) is the same page when it has the
same number, the same broken bytes (the sha256 of the raw streams that broke off) and the same
reason: it keeps its decision too.
"""

from __future__ import annotations

from dataclasses import replace

from report_pipeline.core.archive.manifest import recounted
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import parse_iso
from report_pipeline.core.model.records import ChildRecord, Manifest, PageRow, Review
from report_pipeline.core.retention import deadlines
from report_pipeline.core.storage.store import Store

Identity = tuple[str, str]  # (sha256 of the quarantined stream, quarantine reason)
PageIdentity = tuple[int, str, str]  # (page, sha256 of its broken streams, reason)


def decided(store: Store, manifest: Manifest) -> dict[Identity, ChildRecord]:
    """The decided images of `manifest`, by what makes another revision's image the same."""
    found: dict[Identity, ChildRecord] = {}
    origins: dict[str, Manifest | None] = {}
    for child in manifest.children:
        if child.review and child.review.decision:
            identity = _identity(store, manifest, child, origins)
            if identity:
                found.setdefault(identity, child)
    return found


def evidence_of(child: ChildRecord) -> str:
    """The sha256 of a quarantined child's evidence ("" when none is kept)."""
    if child.state == "quarantined" and child.object_key:
        return keys.parse_archive_key(child.object_key).digest
    return ""


def _identity(
    store: Store, manifest: Manifest, child: ChildRecord, origins: dict[str, Manifest | None]
) -> Identity | None:
    review = child.review
    assert review is not None
    if review.decision == "rejected":
        digest = review.evidence or evidence_of(child)
        return (digest, child.quarantine_reason or "") if digest else None
    if not (child.object_key and child.content_hash and review.lifted):
        return None
    digest = review.evidence or _evidence_in_origin(store, manifest, child, origins)
    return (digest, review.lifted) if digest else None


def _evidence_in_origin(
    store: Store, manifest: Manifest, child: ChildRecord, origins: dict[str, Manifest | None]
) -> str:
    """An accept recorded before decisions named their evidence: the revision it was decided
    on (a tombstone keeps its children) still names the evidence of the same sequence."""
    revision = child.review.from_revision if child.review else ""
    if revision not in origins:
        key = keys.manifest_key(manifest.report_id, revision)
        origins[revision] = store_json.read_manifest(store, key) if revision else None
    origin = origins[revision]
    same = [c for c in (origin.children if origin else ()) if c.sequence == child.sequence]
    return keys.parse_archive_key(same[0].object_key).digest if same and same[0].object_key else ""


def carried(store: Store, manifest: Manifest, previous: Manifest) -> Manifest:
    """`manifest`, a new revision of the month, with `previous`'s decisions on the same objects
    (counts recounted). Accepted PNGs are copied under the new revision, and the evidence they
    replace there is deleted when no other occurrence still needs it. A rejected image whose
    evidence is kept less than the archive gets the same deadline marker. A decided damaged
    page's decision goes to the same page."""
    decisions = decided(store, previous)
    pages = _carried_pages(manifest, previous)
    if not decisions:
        return replace(manifest, pages=pages)
    children: list[ChildRecord] = []
    replaced: set[str] = set()
    for child in manifest.children:
        digest = evidence_of(child)
        hit = decisions.get((digest, child.quarantine_reason or "")) if digest else None
        if hit is None or child.review:
            children.append(child)
            continue
        review = replace(hit.review, evidence=digest)
        if review.decision == "rejected":
            children.append(replace(child, review=review))
            _evidence_deadline(store, manifest, review)
            continue
        children.append(_accepted(store, manifest, child, hit, review))
        replaced.add(child.object_key or "")
    kept = {c.object_key for c in children if c.object_key}
    store.delete_many(sorted(replaced - kept))
    return recounted(replace(manifest, pages=pages), children)


def page_identity(row: PageRow) -> PageIdentity | None:
    """What makes another revision's damaged page the same as this one (None: no evidence)."""
    return (row.page, row.evidence, row.reason) if row.evidence else None


def _carried_pages(manifest: Manifest, previous: Manifest) -> tuple[PageRow, ...]:
    """`manifest`'s page rows, each undecided damaged page with the decision on the same page
    of `previous`."""
    decisions = {page_identity(row): row.review for row in previous.pages
                 if row.review and row.evidence}  # fmt: skip
    carried_rows = []
    for row in manifest.pages:
        same = row.state == "damaged" and row.evidence and not row.review
        review = decisions.get(page_identity(row)) if same else None
        carried_rows.append(replace(row, review=review) if review else row)
    return tuple(carried_rows)


def _accepted(
    store: Store, manifest: Manifest, child: ChildRecord, hit: ChildRecord, review: Review
) -> ChildRecord:
    """`child` archived with the PNG the decision on `hit` made, copied under this revision."""
    key = keys.image_key(manifest.report_id, manifest.parent_revision, hit.content_hash or "")
    store.copy(hit.object_key or "", key)  # inside the store; again: unchanged
    return replace(
        child, state="archived", content_hash=hit.content_hash, format=hit.format,
        mode=hit.mode, bytes=hit.bytes, object_key=key, md5=hit.md5,
        quarantine_reason=None, quarantine_detail=None, review=review,
    )  # fmt: skip


def _evidence_deadline(store: Store, manifest: Manifest, review: Review) -> None:
    if review.evidence_delete_by:
        by = parse_iso(review.evidence_delete_by)
        deadlines.record(
            store, deadlines.EVIDENCE, by, manifest.report_id, manifest.parent_revision
        )

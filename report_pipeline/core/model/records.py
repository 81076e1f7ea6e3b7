"""The archive's vocabulary: one image occurrence from the worker to the manifest, typed.

An occurrence is an `OutcomeRecord` in the worker's `outcomes.json`, a `ChildRecord` once it is
archived or quarantined (`children/<task>.json`, then the manifest), and the `Manifest` accounts
for all of them. These are plain frozen dataclasses (no PDF stack, no JSON): store_json.py is the
only place they become JSON and back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from report_pipeline.core.model.clock import Deadlines
from report_pipeline.core.model.outcome import ImageOutcome

# What is written. 2: each child with an object records its MD5 (`md5`). 3: what intake found
# about the PDF itself (`encrypted`, `permissions`, `shared_page_nodes`). 4: which file the
# revision was made from (`source_file`), and on a superseded revision its successor
# (`superseded_by`); a decision names the evidence it was taken on (`review.evidence`); a child
# says what its archived file leaves out of the source (`notes`, left out when there is nothing).
# 5: an occurrence a viewer does not show (hidden optional content, a hidden annotation) has
# state `hidden` unless the deployment archives it, and says why (`hidden`); counts and page rows
# count them (`hidden`); each left out when there is none. The manifest is complete when
# archived + quarantined + hidden = expected.
#    A page whose content stream broke off is `damaged`, with what broke off (`breaks`), its
# `evidence` and a reviewer's decision (`review`); `repaired_streams` (each left out when empty).
SCHEMA_VERSION = 5
READABLE_SCHEMAS = (1, 2, 3, 4, 5)  # 1: without `md5`; such archives are checked by re-hashing


@dataclass(frozen=True)
class OutcomeRecord:
    """The worker's outcome as `outcomes.json` keeps it: the archive key extraction wrote its
    bytes to (None when there are none), the lease of the run that wrote them, and the MD5 of
    those bytes (what S3 checked the upload against and lists as the ETag)."""

    outcome: ImageOutcome
    object_key: str | None
    lease: str
    md5: str | None = None


@dataclass(frozen=True)
class ChildRecord:
    sequence: int
    page: int
    index: int
    state: str  # archived | quarantined | hidden (expired in a tombstone)
    attempts: int
    # validation settled (archived or quarantined) on the first attempt: no retry, no redelivery
    validated_first_attempt: bool
    queued_at: str
    started_at: str
    finished_at: str
    content_hash: str | None
    width: int
    height: int
    format: str | None
    mode: str | None
    bytes: int
    stream_bytes: int
    declared_type: str
    signature: str | None
    quarantine_reason: str | None
    quarantine_detail: str | None
    object_key: str | None
    cleanup_lease: str
    origin: str  # how the page draws the image: xobject, inline, form/xobject, annotation/…
    xref: int  # the image's PDF object number (0: inline), to compare with `pdfimages -list`
    # MD5 (hex) of the bytes uploaded to `object_key`, recorded at upload (None in manifests
    # from before it was kept): what S3 checked the upload against and lists as the ETag
    md5: str | None = None
    # A reviewer's decision on a quarantined image (core/review/; None: undecided, and then left
    # out of the JSON): accepted (archived now) or rejected (still quarantined)
    review: Review | None = None
    # what the archived file leaves out of the source and why, e.g. an embedded ICC profile
    # dropped over its cap ("": nothing, and then left out of the JSON, as before it was kept)
    notes: str = ""
    # why a viewer does not show it: optional_content_off | annotation_hidden (state `hidden`,
    # or `archived` when the deployment archives hidden content); "" when it is shown, and then
    # left out of the JSON
    hidden: str = ""


@dataclass(frozen=True)
class Review:
    decision: str  # accepted | rejected
    reviewer: str
    decided_at: str
    note: str = ""
    lifted: str = ""  # accepted: the one check lifted for this image (its quarantine reason)
    from_revision: str = ""  # the revision whose quarantine it was decided on
    # rejected, with review.rejected_evidence_days set: when its evidence goes (before the
    # archive clock); "" keeps it on the archive clock
    evidence_delete_by: str = ""
    # the sha256 of the quarantined stream decided on: with the reason, what makes a later
    # revision's quarantined image "the same" so the decision carries over ("": decided before
    # it was recorded; found through `from_revision`)
    evidence: str = ""


@dataclass(frozen=True)
class SourceFile:
    """Which file of the month's folder a revision was made from, as intake chose it (the name
    within the month folder only, never a path)."""

    source: str  # the report source's name
    name: str
    bytes: int
    sha256: str
    pages: int
    arrived_at: str  # when intake first saw these bytes in the month ("": before it recorded)
    superseded: tuple[str, ...] = ()  # the month folder's other files, which arrived earlier


@dataclass(frozen=True)
class SourceFacts:
    """What intake found about the PDF itself, carried from staging into the manifest."""

    repaired: bool = False  # MuPDF opened it only by repairing its cross-reference table
    encrypted: bool = False  # encrypted, but it opens without a password (permissions only)
    permissions: tuple[str, ...] = ()  # what the encryption grants: print, copy, ...
    shared_page_nodes: int = 0  # page-tree nodes referenced more than once (read each time)
    signature_offset: int = 0  # bytes before `%PDF-` (readers accept it within the first 1,024)


@dataclass(frozen=True)
class Counts:
    pages: int
    pages_unaccounted: int  # pages intake counted that have no row
    expected: int
    accounted: int
    archived: int
    quarantined: int
    distinct_images: int
    duplicate_occurrences: int
    archived_bytes: int  # of the distinct images
    hidden: int = 0  # occurrences a viewer does not show, not archived (left out of the JSON at 0)


@dataclass(frozen=True)
class Metrics:
    validated_first_attempt_pct: float
    queue_age_p95_seconds: float
    peak_rss_kib: int


@dataclass(frozen=True)
class Break:
    """A content stream of a page whose operators were cut off, or that was nested too deep to
    run (core/draws/breaks.py)."""

    reason: str  # stream_unreadable | stream_cut_off | page_unloadable | stream_too_deep
    stream: str  # which: "page content (object 7)", "form (object 12)", "annotation/form (…)"
    what: str  # what broke off: "its data ends early, inside an inline image", …
    drawn: int  # the page's image draws before it broke off (its first `drawn` records)


@dataclass(frozen=True)
class PageStreams:
    """What the page walk found about one page's content streams (core/draws/breaks.py): how
    many broke off, what broke off (the first few), the sha256 of their raw bytes, and how many
    MuPDF repaired."""

    broken: int = 0
    breaks: tuple[Break, ...] = ()
    evidence: str = ""
    repaired: int = 0


@dataclass(frozen=True)
class PageRow:
    """One page: its image draws accounted for, and whether its content streams were whole.

    A page whose draws are all accounted for is `complete`, or `damaged` when a content
    stream broke off (`breaks`): what it would have drawn after the break is unknown, so the
    page itself is quarantined, accounted for by this row, and waits for a reviewer (`review`:
    accepted as it is, or rejected). `incomplete`: draws unaccounted for. The optional fields
    are left out of the JSON when empty, as before they were kept."""

    page: int
    expected: int
    archived: int
    quarantined: int
    state: str  # complete | damaged | incomplete
    broken_streams: int = 0  # content streams that broke off
    hidden: int = 0  # occurrences not shown and not archived (left out of the JSON at 0)
    # content streams whose data ended early or failed its checksum, their operators whole
    repaired_streams: int = 0
    breaks: tuple[Break, ...] = ()  # what broke off, stream by stream
    # sha256 of the raw bytes of the streams that broke off: with the page and its reason,
    # what makes a later revision's damaged page "the same", so a decision carries over
    evidence: str = ""
    review: Review | None = None  # a reviewer's decision on a damaged page

    @property
    def reason(self) -> str:
        """Why the page is quarantined: its first break's reason ("" when none broke off)."""
        return self.breaks[0].reason if self.breaks else ""


@dataclass(frozen=True)
class Deleted:
    """What the long clock removed from an expired revision."""

    objects: int
    bytes: int


@dataclass(frozen=True)
class Manifest:
    """One revision's account of every page and image occurrence. `expired_at` and `deleted`
    are set only on a tombstone (state `expired`), what stays once the long clock has run."""

    schema_version: int
    parent_revision: str
    report_id: str
    month: str
    source_hash: str
    extractor_version: str
    state: str  # complete | incomplete | expired
    repaired: bool
    created_at: str
    deadlines: Deadlines
    counts: Counts
    metrics: Metrics
    pages: tuple[PageRow, ...]
    children: tuple[ChildRecord, ...]
    expired_at: str | None = None
    deleted: Deleted | None = None
    # schema 3 (None in older manifests, and then left out of the JSON)
    encrypted: bool | None = None
    permissions: tuple[str, ...] | None = None
    shared_page_nodes: int | None = None
    # A revision made by a quarantine review (core/review/) names the revision it revised.
    # (`parent_revision` is the manifest's own revision: the parent of its child records.)
    previous_revision: str | None = None
    # schema 4 (None in older manifests, and then left out of the JSON)
    source_file: SourceFile | None = None
    superseded_by: str | None = None  # a tombstone's: the month's revision that replaced it
    signature_offset: int | None = None  # bytes before `%PDF-`; None (absent) when there are none


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def tombstone(
    manifest: Manifest, expired_at: str, size: int, objects: int, successor: str = ""
) -> Manifest:
    """What stays of an expired revision: the record, with every child marked `expired`;
    `successor` names the revision that superseded it ("": the archive clock ran out)."""
    return replace(
        manifest,
        state="expired",
        expired_at=expired_at,
        deleted=Deleted(objects=objects, bytes=size),
        children=tuple(replace(child, state="expired") for child in manifest.children),
        superseded_by=successor or manifest.superseded_by,
    )

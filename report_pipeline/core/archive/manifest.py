"""The manifest: one record per revision accounting for every page and image occurrence.

Built here from typed child records; store_json.py writes and reads it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from report_pipeline.core.model.clock import Deadlines, parse_iso
from report_pipeline.core.model.messages import RevisionRef
from report_pipeline.core.model.records import (
    SCHEMA_VERSION,
    ChildRecord,
    Counts,
    Manifest,
    Metrics,
    PageRow,
    PageStreams,
    SourceFacts,
    SourceFile,
    percentile,
)

WHOLE = PageStreams()


def _page_rows(
    expected: dict[int, int], children: list[ChildRecord], streams: dict[int, PageStreams]
) -> tuple[PageRow, ...]:
    """One row per page, with what the walk found about its content streams."""
    rows = []
    for page, count in sorted(expected.items()):
        found = streams.get(page, WHOLE)
        rows.append(PageRow(
            page=page, expected=count, archived=0, quarantined=0, state="",
            broken_streams=found.broken, repaired_streams=found.repaired, breaks=found.breaks,
            evidence=found.evidence,
        ))  # fmt: skip
    return _counted(rows, children)


def _counted(
    rows: list[PageRow] | tuple[PageRow, ...], children: list[ChildRecord]
) -> tuple[PageRow, ...]:
    """`rows` with their images counted. A page whose images are all accounted for (archived,
    quarantined or hidden: not shown, and not archived) is `complete`, or `damaged` when a
    content stream broke off: the page is then accounted for by its own row, a page-level
    quarantine (what the stream would have drawn after the break is unknown). Else it is
    `incomplete`."""
    states = Counter((c.page, c.state) for c in children)
    counted = []
    for row in rows:
        archived, quarantined = states[(row.page, "archived")], states[(row.page, "quarantined")]
        hidden = states[(row.page, "hidden")]
        state = "damaged" if row.broken_streams else "complete"
        if archived + quarantined + hidden != row.expected:
            state = "incomplete"
        counted.append(replace(row, archived=archived, quarantined=quarantined, hidden=hidden,
                               state=state))  # fmt: skip
    return tuple(counted)


def damaged_pages(manifest: Manifest) -> list[PageRow]:
    """The revision's damaged pages (a content stream broke off), in page order."""
    return [row for row in manifest.pages if row.state == "damaged"]


def _metrics(children: list[ChildRecord], peak_rss_kib: int) -> Metrics:
    ages = [(parse_iso(c.started_at) - parse_iso(c.queued_at)).total_seconds() for c in children]
    first = sum(c.validated_first_attempt for c in children)
    return Metrics(
        validated_first_attempt_pct=round(100 * first / len(children), 2) if children else 100.0,
        queue_age_p95_seconds=round(percentile(ages, 95), 3),
        peak_rss_kib=peak_rss_kib,
    )


def _counts(expected: dict[int, int], children: list[ChildRecord], pages: int | None) -> Counts:
    archived = [c for c in children if c.state == "archived"]
    distinct = {c.content_hash: c.bytes for c in archived}
    return Counts(
        pages=len(expected),
        pages_unaccounted=max(0, (len(expected) if pages is None else pages) - len(expected)),
        expected=sum(expected.values()),
        accounted=len(children),
        archived=len(archived),
        quarantined=sum(c.state == "quarantined" for c in children),
        distinct_images=len(distinct),
        duplicate_occurrences=len(archived) - len(distinct),
        archived_bytes=sum(distinct.values()),
        hidden=sum(c.state == "hidden" for c in children),
    )


NO_FACTS = SourceFacts()  # a PDF that needed no repair, is not encrypted and shares no node


def build_manifest(
    ref: RevisionRef,
    expected: dict[int, int],
    children: list[ChildRecord],
    deadlines: Deadlines,
    created_at: str,
    peak_rss_kib: int = 0,
    pages: int | None = None,
    facts: SourceFacts = NO_FACTS,
    streams: dict[int, PageStreams] | None = None,
    source_file: SourceFile | None = None,
) -> Manifest:
    """The parent is complete only when archived + quarantined + hidden equals the expected
    count and every one of the report's `pages` (as intake counted them) has its row, each
    accounted for: a damaged page (`streams`: page -> its content streams that broke off or were
    repaired) is, by its own row."""
    counts = _counts(expected, children, pages)
    rows = _page_rows(expected, children, streams or {})
    accounted = counts.archived + counts.quarantined + counts.hidden == counts.expected
    complete = accounted and counts.pages_unaccounted == 0
    complete = complete and all(row.state != "incomplete" for row in rows)
    return Manifest(
        schema_version=SCHEMA_VERSION,
        parent_revision=ref.revision,
        report_id=ref.report_id,
        month=ref.month,
        source_hash=ref.source_hash,
        extractor_version=ref.extractor_version,
        state="complete" if complete else "incomplete",
        repaired=facts.repaired,
        created_at=created_at,
        deadlines=deadlines,
        counts=counts,
        metrics=_metrics(children, peak_rss_kib),
        pages=rows,
        children=tuple(children),
        encrypted=facts.encrypted,
        permissions=facts.permissions,
        shared_page_nodes=facts.shared_page_nodes,
        source_file=source_file,
        signature_offset=facts.signature_offset or None,
    )


def sequenced(records: list[ChildRecord]) -> list[ChildRecord]:
    """Child records from every task, numbered in page order."""
    ordered = sorted(records, key=lambda r: (r.page, r.index))
    return [replace(r, sequence=n) for n, r in enumerate(ordered, start=1)]


def quarantine_reasons(manifest: Manifest) -> Counter:
    """How many image occurrences were quarantined, per reason."""
    return Counter(c.quarantine_reason for c in manifest.children if c.state == "quarantined")


def recounted(manifest: Manifest, children: list[ChildRecord]) -> Manifest:
    """`manifest` with `children` in place of its own: counts and page rows recounted, the
    same report, pages (with what broke off and any decision on them), deadlines and
    revision."""
    expected = {row.page: row.expected for row in manifest.pages}
    pages = manifest.counts.pages + manifest.counts.pages_unaccounted
    return replace(
        manifest,
        counts=_counts(expected, children, pages),
        pages=_counted(manifest.pages, children),
        children=tuple(children),
    )


def revised(
    manifest: Manifest, children: list[ChildRecord], revision: str, created_at: str
) -> Manifest:
    """A new revision of `manifest` with `children` in place of its own (a quarantine review's
    decisions; a decision on a page is on `manifest`'s rows): the same report, pages and
    deadlines; counts and page rows recounted; `previous_revision` names the revision it
    revises."""
    return replace(
        recounted(manifest, children),
        parent_revision=revision,
        previous_revision=manifest.parent_revision,
        created_at=created_at,
    )

"""A manifest summarized for a person: what `make demo` and `report-pipeline preview` print."""

from __future__ import annotations

from collections import Counter

from report_pipeline.core.archive.manifest import damaged_pages, quarantine_reasons
from report_pipeline.core.model import keys
from report_pipeline.core.model.current import MonthHead
from report_pipeline.core.model.records import ChildRecord, Manifest, PageRow, Review
from report_pipeline.core.model.wording import plural


def summary(manifest: Manifest, location: str | None = None) -> str:
    """Counts, quarantine reasons, review decisions (only when there are any) and the
    first-attempt share; `location` is where the manifest is kept (a path or an s3:// URL), left
    out when None."""
    counts = manifest.counts
    reasons = sorted(quarantine_reasons(manifest).items())
    lines = [
        f"report {manifest.report_id}  revision {manifest.parent_revision}  state {manifest.state}",
        f"  pages                 {counts.pages}",
        f"  image occurrences     {counts.expected} expected, {counts.accounted} accounted",
        f"  images archived       {plural(counts.archived, 'occurrence')}, "
        f"{plural(counts.distinct_images, 'distinct file')} ({counts.archived_bytes:,} bytes)",
        f"  duplicate occurrences {counts.duplicate_occurrences}",
        f"  quarantined           {counts.quarantined}",
        *(f"    {n} x {reason}" for reason, n in reasons),
        *not_shown(manifest),
        *damaged(manifest),
        *reviewed(manifest),
        f"  first attempt         {manifest.metrics.validated_first_attempt_pct}% "
        "settled, no retry",
    ]
    if location is not None:
        lines.append(f"  manifest              {location}")
    return "\n".join(lines)


def provenance(manifest: Manifest, chain: list[MonthHead]) -> str:
    """Which file the revision was made from, what it superseded, its extractor, the month's
    archive deadline and the revisions the month went through (`show`)."""
    source = manifest.source_file
    deadline = manifest.deadlines.archive_delete_by
    lines = [f"  extractor version     {manifest.extractor_version}",
             f"  archive deadline      {deadline} (the month's)"]  # fmt: skip
    if source is None:
        lines.insert(0, f"  report file           (not recorded)  sha256 {manifest.source_hash}")
    else:
        lines[:0] = [
            f"  report file           {source.name} ({source.source}), {source.bytes:,} bytes, "
            f"{plural(source.pages, 'page')}, sha256 {source.sha256}",
            f"  arrived               {source.arrived_at or '(before arrivals were recorded)'}",
            f"  superseded files      {', '.join(source.superseded) or '(none)'}",
        ]
    for head in chain:
        was = f" (replaced {head.previous})" if head.previous else ""
        lines.append(f"    revision {head.revision}  {head.cause:<12} {head.at}{was}")
    if chain:
        lines.insert(len(lines) - len(chain), f"  revisions             {len(chain)}, newest last")
    return "\n".join(lines)


def not_shown(manifest: Manifest) -> list[str]:
    """A `hidden` section: the occurrences a viewer does not show, left unarchived, per reason,
    and those archived all the same (Limits.archive_hidden); no lines when there are none."""
    left = Counter(c.hidden for c in manifest.children if c.state == "hidden")
    kept = sum(1 for c in manifest.children if c.hidden and c.state != "hidden")
    if not left and not kept:
        return []
    lines = [f"  hidden                {sum(left.values())} not shown, not archived"]
    lines += [f"    {n} x {reason}" for reason, n in sorted(left.items())]
    return lines + ([f"    {kept} more not shown, archived all the same"] if kept else [])


def page_counts(manifest: Manifest) -> str:
    """One line per page: its images, how many were archived and quarantined (and left hidden,
    when any page has some), its state."""
    hidden = any(p.hidden for p in manifest.pages)
    lines = ["  page  images  archived  quarantined" + ("  hidden" if hidden else "") + "  state"]
    lines += [
        f"  {p.page:>4}  {p.expected:>6}  {p.archived:>8}  {p.quarantined:>11}"
        + (f"  {p.hidden:>6}" if hidden else "")
        + f"  {p.state}"
        for p in manifest.pages
    ]
    return "\n".join(lines)


def damaged(manifest: Manifest) -> list[str]:
    """A `damaged pages` section (a content stream broke off), and the streams MuPDF repaired;
    no lines when every page was whole."""
    rows = damaged_pages(manifest)
    lines = [f"  damaged pages         {len(rows)}"] if rows else []
    for row in rows:
        decided = _decision(row.review) if row.review else "undecided"
        lines.append(f"    page {row.page}  {row.reason}  {decided}")
    repaired = sum(row.repaired_streams for row in manifest.pages)
    if repaired:
        lines.append(f"  repaired streams      {repaired} (ended early or without their "
                     "checksum, operators whole)")  # fmt: skip
    return lines


def page_state(manifest: Manifest, row: PageRow) -> list[str]:
    """What `show --page` says about the page itself: damaged (what broke off, what was drawn
    before the break, the decision) and repaired streams; no lines for a whole page."""
    lines = []
    if row.state == "damaged":
        before = row.breaks[0].drawn if row.breaks else 0
        drawn = [c.sequence for c in manifest.children if c.page == row.page and c.index < before]
        lines += [
            "  damaged (a page-level quarantine): a content stream broke off, what followed is "
            "unknown",
            *(f"    {_printable(b.stream)}: {_printable(b.what)}" for b in row.breaks),
            *([f"    and {row.broken_streams - len(row.breaks)} more stream(s)"]
              if row.broken_streams > len(row.breaks) else []),
            f"    drawn before the break: {plural(len(drawn), 'image')}"
            + (f" (#{', #'.join(map(str, drawn))})" if drawn else ""),
            f"    reviewed: {_decision(row.review)}" if row.review else
            f"    review: undecided (report-pipeline quarantine decide {manifest.month} "
            f"--page {row.page} accept|reject)",
        ]  # fmt: skip
    if row.repaired_streams:
        streams = plural(row.repaired_streams, "content stream")
        lines.append(f"  repaired: {streams} whose data ended early or without its checksum; "
                     "its operators parse to the end")  # fmt: skip
    return lines


def page_occurrences(manifest: Manifest, page: int) -> str:
    """The page's state when it is not simply whole, then one line per image occurrence of
    `page`: what happened to it, and where it is kept."""
    lines = [f"page {page} of {manifest.report_id}  revision {manifest.parent_revision}"]
    lines += [
        line for row in manifest.pages if row.page == page for line in page_state(manifest, row)
    ]
    for c in (c for c in manifest.children if c.page == page):
        why = f"{c.quarantine_reason}: {c.quarantine_detail or ''}".rstrip(": ")
        hidden = c.hidden if c.state == "hidden" else f"hidden: {c.hidden}"
        lines += [
            f"  #{c.sequence}  {c.origin}  {c.state}"
            + (f" ({why})" if c.quarantine_reason else "")
            + (f" ({hidden})" if c.hidden else ""),
            f"      {c.format or c.declared_type}  {c.width}x{c.height}  {_size(c)}"
            f"  sha256 {c.content_hash or '-'}",
            f"      {c.object_key or '-'}",
            *([f"      reviewed: {_decision(c.review)}"] if c.review else []),
        ]
    return "\n".join(lines)


def reviewed(manifest: Manifest) -> list[str]:
    """A `reviewed` section: one line per decision (an object drawn on several pages is decided
    once), who took it, when, and the note; no lines when nothing was decided."""
    decided: dict[Review, list[ChildRecord]] = {}
    for child in manifest.children:
        if child.review is not None:
            decided.setdefault(child.review, []).append(child)
    pages = [row for row in manifest.pages if row.review is not None]
    if not decided and not pages:
        return []
    lines = [f"  reviewed              {plural(len(decided) + len(pages), 'decision')}"]
    lines += [f"    page {row.page}  damaged page  {_decision(row.review)}"
              for row in pages if row.review is not None]  # fmt: skip
    for review, children in decided.items():
        first, pages = children[0], sorted({c.page for c in children})
        where = f"page {pages[0]}" if len(pages) == 1 else f"pages {','.join(map(str, pages))}"
        reason = f"{first.quarantine_reason}  " if first.quarantine_reason else ""
        lines.append(f"    #{first.sequence}  {where}  {reason}{_decision(review)}")
    return lines


def _decision(review: Review) -> str:
    lifted = f", {review.lifted} lifted" if review.lifted else ""
    note = f'  "{_printable(review.note)}"' if review.note else ""
    return f"{review.decision} by {_printable(review.reviewer)} {review.decided_at}{lifted}{note}"


def _size(child: ChildRecord) -> str:
    """What is kept of it: a quarantined image's evidence is its raw stream, as the PDF held it;
    of a hidden one, nothing (it was not read)."""
    if child.state == "hidden":
        return "not archived"
    if child.state != "quarantined":
        return f"{child.bytes:,} bytes"
    if child.object_key and keys.parse_archive_key(child.object_key).kind == keys.QUARANTINE:
        return f"evidence {child.stream_bytes:,} bytes"
    return "no evidence kept"


def _printable(text: str) -> str:
    """`text` with what a terminal would act on (escapes, line breaks, bidi overrides) spelled
    out: notes recorded before notes were checked may hold them."""
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)

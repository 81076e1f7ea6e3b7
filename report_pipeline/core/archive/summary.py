"""A manifest summarized for a person: what `make demo` and `report-pipeline preview` print."""

from __future__ import annotations

from report_pipeline.core.archive.manifest import quarantine_reasons
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.wording import plural


def summary(manifest: Manifest, location: str | None = None) -> str:
    """Counts, quarantine reasons and the first-attempt share; `location` is where the manifest
    is kept (a path or an s3:// URL), left out when None."""
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
        f"  first attempt         {manifest.metrics.validated_first_attempt_pct}% "
        "settled, no retry",
    ]
    if location is not None:
        lines.append(f"  manifest              {location}")
    return "\n".join(lines)


def page_counts(manifest: Manifest) -> str:
    """One line per page: its images, how many were archived and quarantined, its state."""
    lines = ["  page  images  archived  quarantined  state"]
    lines += [
        f"  {p.page:>4}  {p.expected:>6}  {p.archived:>8}  {p.quarantined:>11}  {p.state}"
        for p in manifest.pages
    ]
    return "\n".join(lines)


def page_occurrences(manifest: Manifest, page: int) -> str:
    """One line per image occurrence of `page`: what happened to it, and where it is kept."""
    lines = [f"page {page} of {manifest.report_id}  revision {manifest.parent_revision}"]
    for c in (c for c in manifest.children if c.page == page):
        why = f"{c.quarantine_reason}: {c.quarantine_detail or ''}".rstrip(": ")
        lines += [
            f"  #{c.sequence}  {c.origin}  {c.state}"
            + (f" ({why})" if c.quarantine_reason else ""),
            f"      {c.format or c.declared_type}  {c.width}x{c.height}  {c.bytes:,} bytes"
            f"  sha256 {c.content_hash or '-'}",
            f"      {c.object_key or '-'}",
        ]
    return "\n".join(lines)

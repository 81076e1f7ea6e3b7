"""A manifest summarized for a person: what `make demo` and `report-pipeline preview` print."""

from __future__ import annotations

from report_pipeline.core.archive.manifest import quarantine_reasons
from report_pipeline.core.archive.records import Manifest
from report_pipeline.core.wording import plural


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
        f"  first-attempt valid   {manifest.metrics.validated_first_attempt_pct}%",
    ]
    if location is not None:
        lines.append(f"  manifest              {location}")
    return "\n".join(lines)

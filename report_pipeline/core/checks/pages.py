"""Per-month check on the revision's pages: every page drawn whole, or accepted as it is.

A damaged page (a content stream broke off: core/draws/breaks.py) is accounted for by its own
row, so it does not make the manifest incomplete (`manifest_complete` passes); this check names
it until a reviewer accepts it as it is (core/review/pages.py). A rejected page keeps it
warning, with the reviewer's note as the reason.
"""

from __future__ import annotations

from report_pipeline.core.archive.manifest import damaged_pages
from report_pipeline.core.checks.check_outcome import CheckOutcome
from report_pipeline.core.model.records import Manifest, PageRow

SHOWN = 20  # pages named in the description; the metadata lists them all


def pages_drawn_whole(manifest: Manifest) -> CheckOutcome:
    """Passes when no content stream of the revision broke off, or a reviewer accepted each
    damaged page as it is; WARN names the others: undecided (with what broke off) or rejected
    (with who rejected it and why)."""
    damaged = damaged_pages(manifest)
    open_pages = [row for row in damaged if not _accepted(row)]
    rejected = [row for row in open_pages if row.review]
    if not damaged:
        text = "every page drawn whole"
    elif not open_pages:
        text = f"every page drawn whole or accepted as it is ({len(damaged)} damaged, accepted)"
    else:
        said = "; ".join(_said(row) for row in open_pages[:SHOWN])
        more = f"; and {len(open_pages) - SHOWN} more" if len(open_pages) > SHOWN else ""
        text = f"{len(open_pages)} damaged page(s) not accepted: {said}{more}"
    return CheckOutcome(
        "pages_drawn_whole", not open_pages, text,
        {"month": manifest.month, "revision": manifest.parent_revision,
         "damaged_pages": ", ".join(str(row.page) for row in open_pages),
         "undecided": len(open_pages) - len(rejected), "rejected": len(rejected),
         "accepted": len(damaged) - len(open_pages),
         "repaired_streams": sum(row.repaired_streams for row in manifest.pages)},
    )  # fmt: skip


def _accepted(row: PageRow) -> bool:
    return row.review is not None and row.review.decision == "accepted"


def _said(row: PageRow) -> str:
    if row.review is not None:
        note = row.review.note or "no note"
        return f"page {row.page} rejected by {row.review.reviewer}: {note}"
    first = row.breaks[0] if row.breaks else None
    what = f"{first.stream}: {first.what}" if first else "a content stream broke off"
    return f"page {row.page} ({what}; undecided)"

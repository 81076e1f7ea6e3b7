"""A damaged page as a page-level quarantine: listed for review, and decided on as it is.

A page is damaged when one of its content streams broke off (core/draws/breaks.py): what the
stream would have drawn after the break is unknown. Its images drawn before the break are
records like any other; the page itself waits for a reviewer, who compares it with the report:
**accept** it as it is (what it shows is what there is: the month's `pages_drawn_whole` check
clears for it) or **reject** it (the check keeps warning, with the note as the reason). There is
nothing to decode and nothing is archived by either decision. Like a decision on an image, it
publishes a new revision of the month (core/review/decide.py) and carries over to a later
revision whose page has the same number, the same broken bytes and the same reason
(core/archive/carry.py).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, replace
from datetime import datetime

from report_pipeline.core.archive import succession
from report_pipeline.core.archive.manifest import damaged_pages
from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.model import keys
from report_pipeline.core.model.clock import iso
from report_pipeline.core.model.records import Manifest, PageRow, Review
from report_pipeline.core.model.settings import ReviewSettings
from report_pipeline.core.review.decide import Decided, publish
from report_pipeline.core.review.queue import ReviewError, month_now
from report_pipeline.core.review.request import DECISIONS, check_request
from report_pipeline.core.storage.store import Store


@dataclass(frozen=True)
class PageItem:
    """One damaged page of a month's archived revision."""

    month: str
    revision: str
    page: int
    # the first break's: stream_unreadable | stream_cut_off | page_unloadable | stream_too_deep
    reason: str
    detail: str  # what broke off, stream by stream
    broken_streams: int
    drawn: tuple[int, ...]  # the sequences of the images the page drew before it broke off
    images: int  # the page's image records
    evidence: str  # sha256 of the raw bytes of the streams that broke off
    decision: str  # "" while undecided

    def as_json(self) -> dict:
        return {"kind": "page", **self.__dict__, "drawn": list(self.drawn)}

    @property
    def drawn_text(self) -> str:
        """What the page drew before the break, in words."""
        if not self.drawn:
            return "nothing drawn before the break"
        first, last = self.drawn[0], self.drawn[-1]
        which = f"#{first}" if first == last else f"#{first}-#{last}"
        return f"{len(self.drawn)} image(s) drawn before the break ({which})"


def page_items(manifest: Manifest) -> list[PageItem]:
    """Every damaged page of the revision (decided or not), in page order."""
    return [_item(manifest, row) for row in damaged_pages(manifest)]


def broke_off(row: PageRow) -> str:
    """What broke off on the page, stream by stream (and how many more went unsaid)."""
    said = "; ".join(f"{b.stream}: {b.what}" for b in row.breaks)
    more = row.broken_streams - len(row.breaks)
    return said + (f"; and {more} more stream(s)" if more > 0 else "") if said else (
        f"{row.broken_streams} content stream(s) broke off"
    )  # fmt: skip


def _item(manifest: Manifest, row: PageRow) -> PageItem:
    before = row.breaks[0].drawn if row.breaks else 0
    mine = [c for c in manifest.children if c.page == row.page]
    drawn = tuple(c.sequence for c in mine if c.index < before)
    return PageItem(
        manifest.month, manifest.parent_revision, row.page, row.reason or "stream_unreadable",
        broke_off(row), row.broken_streams, drawn, len(mine), row.evidence,
        row.review.decision if row.review else "",
    )  # fmt: skip


def find_page(manifest: Manifest, page: int) -> PageItem:
    """The damaged page `page`, or ReviewError `unknown_page` (no such page, or it is whole)."""
    for item in page_items(manifest):
        if item.page == page:
            return item
    if any(row.page == page for row in manifest.pages):
        raise ReviewError("unknown_page", f"page {page} of {manifest.month} is not damaged: "
                          "there is nothing to review")  # fmt: skip
    raise ReviewError("unknown_page", f"{manifest.month} has no page {page}")


def decide_page(
    store: Store, month: str, page: int, decision: str, reviewer: str, note: str,
    now: datetime, review: ReviewSettings | None = None, expected_revision: str = "",
) -> Decided:  # fmt: skip
    """Accept the damaged page as it is, or reject it: a new revision of the month."""
    reviewer = check_request(month, decision, reviewer, note, review or ReviewSettings())
    found = month_now(store, month, expected_revision)
    manifest = found.manifest
    assert manifest is not None
    previous = manifest.parent_revision
    item, wanted = find_page(manifest, page), DECISIONS[decision]
    if item.decision:
        if item.decision == wanted:
            succession.settle(store, manifest, now)  # a decision that died before it finished
            return Decided(month, 0, wanted, reviewer, previous,
                           manifest.previous_revision or previous, False, "", manifest,
                           page)  # fmt: skip
        raise ReviewError("already_decided", f"page {page} of {month} was {item.decision}; a "
                          "contrary decision is refused")  # fmt: skip
    mark = Review(wanted, reviewer, iso(now), note, "", previous, evidence=item.evidence)
    revision = hashlib.sha256(f"{previous}\npage {page}\n{decision}".encode()).hexdigest()[:20]
    rows = tuple(replace(r, review=mark) if r.page == page else r for r in manifest.pages)
    new = publish(store, found, list(manifest.children), revision, b"", "", now, pages=rows)
    _audit(store, manifest, item, mark, revision, now)
    return Decided(month, 0, wanted, reviewer, revision, previous, True, "", new, page)


def _audit(
    store: Store, manifest: Manifest, item: PageItem, mark: Review, revision: str, now: datetime
) -> None:
    event = {
        "event": "page_decision", "month": manifest.month, "report_id": manifest.report_id,
        "from_revision": manifest.parent_revision, "revision": revision, "page": item.page,
        "evidence": item.evidence, "reason": item.reason, "broke_off": item.detail,
        "decision": mark.decision, "reviewer": mark.reviewer, "decided_at": mark.decided_at,
        "note": mark.note,
    }  # fmt: skip
    key = keys.review_event_key(now, secrets.token_hex(6))
    store.put_bytes(key, json.dumps(event, sort_keys=True).encode())


def pending_pages(store: Store, months: list[str]) -> list[PageItem]:
    """The undecided damaged pages of each of `months` that has an archived revision."""
    found = []
    for month in months:
        record = latest_archived(store, month)
        if record is not None:
            found += [item for item in page_items(record[1]) if not item.decision]
    return found

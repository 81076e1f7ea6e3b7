"""What changed in the sources since the last look: the new-report sensor's cursor, Dagster-free.

The cursor keeps, per source and month, the folder's change token, the fingerprint and sha256 of
the month's current report, and the refusal code if it was refused. A month whose folder token
is unchanged is not listed again, so a quiet tick costs one listing of the month folders, not
one stat per report. A file rewritten in place keeps its folder's token, so every
`SWEEP_SECONDS` a full sweep compares fingerprints (still without reading any report).
No file name is ever kept in the cursor.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from report_pipeline.core.intake.intake import INSPECTION_FAILED
from report_pipeline.core.intake.sources import Entry, ReportSource, newest

CURSOR_VERSION = 1
SWEEP_SECONDS = 600
# Folder timestamps are coarse: a token younger than this may hide a later change in the same
# tick of the clock, so it is not trusted until the next look.
RACY_NS = 1_000_000_000
# Refusals that may pass on another try (a source failing mid-read): looked at again on the next
# sweep rather than every tick, so a report that always fails costs one read per sweep.
RETRIED_REFUSALS = (INSPECTION_FAILED,)


@dataclass
class Cursor:
    swept_ns: int = 0
    months: dict[str, dict[str, dict]] = field(default_factory=dict)  # source → month → state

    @classmethod
    def loads(cls, text: str | None) -> Cursor:
        if not text:
            return cls()
        data = json.loads(text)
        if data.get("v") != CURSOR_VERSION:
            return cls()
        return cls(data["swept_ns"], data["months"])

    def dumps(self) -> str:
        payload = {"v": CURSOR_VERSION, "swept_ns": self.swept_ns, "months": self.months}
        return json.dumps(payload, sort_keys=True, separators=(",", ":"))

    def month(self, source: str, month: str) -> dict:
        return self.months.setdefault(source, {}).setdefault(month, {})

    def sweep_due(self, now_ns: int) -> bool:
        return now_ns - self.swept_ns >= SWEEP_SECONDS * 1_000_000_000


@dataclass(frozen=True)
class Change:
    source: ReportSource
    month: str
    entry: Entry


def changed_heads(
    source: ReportSource, cursor: Cursor, now_ns: int, settle_ns: int, sweep: bool,
    is_open: Callable[[str], bool], notes: list[str],
) -> list[Change]:  # fmt: skip
    """Each month whose current report (the newest settled file) differs from the cursor's.

    A month with a file still arriving (changed less than `settle_ns` ago) waits a tick, and so
    does a month that is not a partition yet or cannot be listed. Reasons for waiting are
    appended to `notes`; a source that fails to list leaves the other sources unaffected.
    """
    months = _listed(source.months, source.name, notes)
    changes = []
    for month, token in sorted(months or []):
        state = cursor.month(source.name, month)
        if token and not sweep and token == state.get("token"):
            continue
        if not is_open(month):
            notes.append(f"{source.name} {month}: not a monthly partition yet; waiting")
            continue
        entries = _listed(lambda m=month: source.entries(m), f"{source.name} {month}", notes)
        if entries is None:
            state["token"] = 0
            continue
        if any(entry.changed_ns > now_ns - settle_ns for entry in entries):
            notes.append(f"{source.name} {month}: a report is still arriving; waiting")
            state["token"] = 0
            continue
        state["token"] = token if token <= now_ns - max(settle_ns, RACY_NS) else 0
        if not entries:
            continue
        head = newest(entries)
        retry = sweep and state.get("refused") in RETRIED_REFUSALS
        if retry or head.fingerprint != state.get("fingerprint"):
            changes.append(Change(source, month, head))
    return changes


def _listed(listing: Callable[[], list], where: str, notes: list[str]) -> list | None:
    """The listing, or None (with a note) when the source fails to list."""
    try:
        return listing()
    except Exception as error:  # a source's own errors (network, permissions) vary by backend
        notes.append(f"{where}: cannot be listed ({type(error).__name__}); trying again next tick")
        return None


def record(cursor: Cursor, change: Change, source_hash: str = "", refused: str = "") -> bool:
    """Remember the month's current report; True when its bytes differ from the last ones."""
    state = cursor.month(change.source.name, change.month)
    new_bytes = bool(source_hash) and source_hash != state.get("sha256")
    state["fingerprint"] = change.entry.fingerprint
    state["refused"] = refused
    if source_hash:
        state["sha256"] = source_hash
    return new_bytes


def defer(cursor: Cursor, change: Change) -> None:
    """Leave a change for the next tick: its month folder is listed again."""
    cursor.month(change.source.name, change.month)["token"] = 0

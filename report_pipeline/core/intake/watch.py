"""What changed in the sources since the last look: the new-report sensor's cursor, Dagster-free.

Every tick lists each open month's files in every source (locally a scandir and a stat per file;
on S3 one request per 1,000 keys) and compares a digest of their fingerprints with the cursor's.
A month whose files did not change is left there: no file read, not even its ledger. A month
that changed is decided again by the one rule (core/intake/month_report.py), which reads only
files whose fingerprint it does not know; so a file overwritten in place, a copy that keeps an
old mtime (`cp -p`) and a new file are all seen on the next tick. The cursor keeps, per month,
that digest, the sha256 of the month's report as last considered and its refusal code; never a
file name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from report_pipeline.core.intake import month_report
from report_pipeline.core.intake.arrivals import Decision, Read, name_of
from report_pipeline.core.intake.intake import INSPECTION_FAILED, RefusedInput
from report_pipeline.core.intake.month_report import describe
from report_pipeline.core.intake.sources import Entry, ReportSource
from report_pipeline.core.storage.store import Store

CURSOR_VERSION = 2
SWEEP_SECONDS = 600
# Refusals that may pass on another try (a source failing mid-read): looked at again on the next
# sweep rather than every tick, so a report that always fails costs one read per sweep.
RETRIED_REFUSALS = (INSPECTION_FAILED,)


@dataclass
class Cursor:
    swept_ns: int = 0
    months: dict[str, dict] = field(default_factory=dict)  # month → digest, sha256, refused

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

    def month(self, month: str) -> dict:
        return self.months.setdefault(month, {})

    def sweep_due(self, now_ns: int) -> bool:
        return now_ns - self.swept_ns >= SWEEP_SECONDS * 1_000_000_000


@dataclass(frozen=True)
class Listing:
    """A month whose files changed since the cursor's look (or whose refusal is retried)."""

    month: str
    sources: dict[str, ReportSource]  # the sources that listed it
    entries: list[Entry]
    digest: str


@dataclass(frozen=True)
class Change:
    """The month's report is a content the cursor has not considered: admit it."""

    source: ReportSource
    month: str
    entry: Entry
    sha256: str
    digest: str


def changed_months(
    sources: Sequence[ReportSource], cursor: Cursor, now_ns: int, settle_ns: int, sweep: bool,
    is_open: Callable[[str], bool], notes: list[str],
) -> list[Listing]:  # fmt: skip
    """Each open month whose files differ from the cursor's digest. A month with a file still
    arriving (changed less than `settle_ns` ago) waits a tick, and so does a month that is not a
    partition yet. Reasons for waiting are appended to `notes`; a source that fails to list is
    noted and left out (its months are looked at again once it lists)."""
    holders: dict[str, list[ReportSource]] = {}
    failed = []
    for source in sources:
        months = _listed(source.months, source.name, notes)
        if months is None:
            failed.append(source.name)
        for month, _token in months or []:
            holders.setdefault(month, []).append(source)
    changes = []
    for month in sorted(holders):
        listing = _listing(month, holders[month], failed, notes)
        state = cursor.month(month)
        retry = sweep and state.get("refused") in RETRIED_REFUSALS
        if listing is None or (listing.digest == state.get("digest") and not retry):
            continue  # unchanged since it was decided (it was a partition then: it still is)
        where = f"{' '.join(s.name for s in holders[month])} {month}"
        if not is_open(month):  # Dagster's check costs ~0.4 ms: only for months that changed
            notes.append(f"{where}: not a monthly partition yet; waiting")
        elif any(entry.changed_ns > now_ns - settle_ns for entry in listing.entries):
            notes.append(f"{where}: a report is still arriving; waiting")
        else:
            changes.append(listing)
    return changes


def _listing(
    month: str, holders: list[ReportSource], failed: list[str], notes: list[str]
) -> Listing | None:
    entries: list[Entry] = []
    listed: dict[str, ReportSource] = {}
    for source in holders:
        found = _listed(lambda s=source: s.entries(month), f"{source.name} {month}", notes)
        if found is None:
            failed = [*failed, source.name]
        else:
            entries.extend(found)
            listed[source.name] = source
    if not listed:
        return None
    lines = sorted(f"{e.ref.source}:{e.fingerprint}" for e in entries)
    lines += [f"!{name}" for name in sorted(failed)]  # a source back: looked at again
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:32]
    return Listing(month, listed, entries, digest)


def _listed(listing: Callable[[], list], where: str, notes: list[str]) -> list | None:
    """The listing, or None (with a note) when the source fails to list."""
    try:
        return listing()
    except Exception as error:  # a source's own errors (network, permissions) vary by backend
        notes.append(f"{where}: cannot be listed ({type(error).__name__}); trying again next tick")
        return None


class BudgetedLooks:
    """Months decided one after another until `max_bytes` have been hashed in this tick (checked
    between months, so no month's look is cut in two); the rest wait for the next tick."""

    def __init__(self, store: Store, read: Read, max_bytes: int, now_ns: int) -> None:
        self.store, self.read, self.max_bytes, self.now_ns = store, read, max_bytes, now_ns
        self.hashed = 0
        self.waiting = 0

    def _counted(self, entry: Entry) -> tuple[str, int]:
        try:
            sha, size = self.read(entry)
        except RefusedInput:
            raise
        except Exception as error:  # a source failing mid-read: retried on the next sweep
            what = type(error).__name__
            message = f"report could not be read or inspected ({what})"
            raise RefusedInput(INSPECTION_FAILED, message) from error
        self.hashed += size
        return sha, size

    def look(self, listing: Listing, notes: list[str]) -> Decision | None:
        if self.hashed >= self.max_bytes:
            self.waiting += 1
            return None
        try:
            return month_report.look(self.store, listing.month, listing.entries,
                                     list(listing.sources), self._counted, self.now_ns)  # fmt: skip
        except Exception as error:  # a source or the store failing: the month waits a tick
            what = type(error).__name__
            notes.append(f"{listing.month}: cannot be looked at ({what}); trying again next tick")
            return None

    def note_waiting(self, notes: list[str]) -> None:
        if self.waiting:
            months = (
                "1 more month waits" if self.waiting == 1 else f"{self.waiting} more months wait"
            )
            notes.append(f"{months} to be read on the next tick")


def judge(
    cursor: Cursor, listing: Listing, decision: Decision, sweep: bool, notes: list[str]
) -> Change | None:
    """The month's report if the cursor has not considered it (or retries its refusal), else
    None, with a note naming the file when a file is the reason."""
    state = cursor.month(listing.month)
    report, file = decision.report, decision.file
    if decision.blocked is not None:
        entry, refused = decision.blocked
        notes.append(f"{where(entry)}: refused ({refused.code}): {refused.message}")
        state["refused"] = refused.code
    elif report is not None and file is None:
        notes.append(
            f"{' '.join(listing.sources)} {listing.month}: the month's latest report "
            f"({describe(report)}) is no longer there; nothing older is taken in its place. Put "
            "it back or add a newer one"
        )
    if decision.blocked is not None or file is None or report is None:
        state["digest"] = listing.digest
        return None
    explain(decision, notes)
    retry = sweep and state.get("refused") in RETRIED_REFUSALS
    if report.sha256 == state.get("sha256") and not retry:
        state["digest"] = listing.digest
        return None
    source = listing.sources[file.ref.source]
    return Change(source, listing.month, file, report.sha256, listing.digest)


def where(entry: Entry) -> str:
    """A file as notes name it: its source, and its name within its month folder."""
    return f"{entry.ref.source} {entry.ref.rel}"


def explain(decision: Decision, notes: list[str]) -> None:
    """Why each file that changed since the month's first look, read now, is not the report."""
    report, first_look = decision.report, decision.ledger.first_look_ns
    for entry, sha in decision.read:
        if report is None or entry == decision.file or entry.changed_ns <= first_look:
            continue
        arrival = decision.ledger.arrivals[sha]
        if sha == report.sha256:
            notes.append(f"{where(entry)}: same content as the month's report ({report.name})")
        elif arrival.name != name_of(entry) or arrival.source != entry.ref.source:
            notes.append(
                f"{where(entry)}: same content as {arrival.name}, which arrived earlier "
                f"({arrival.arrived_at}); not the month's report"
            )
        else:
            notes.append(
                f"{where(entry)}: arrived ({arrival.arrived_at}) before {report.name}; not the "
                "month's report"
            )


def record(cursor: Cursor, change: Change, source_hash: str = "", refused: str = "") -> bool:
    """Remember the month's report as considered; True when it is new (or was refused before)."""
    state = cursor.month(change.month)
    new = change.sha256 != state.get("sha256") or bool(state.get("refused"))
    state.update(digest=change.digest, sha256=source_hash or change.sha256, refused=refused)
    return new


def defer(cursor: Cursor, change: Change) -> None:
    """Leave a change for the next tick: its month is decided again."""
    cursor.month(change.month).pop("digest", None)

"""Which file is a month's report: the one whose content arrived last. Pure and Dagster-free.

"Arrived" means new content (a sha256 the month has not seen), not a newer mtime. A month's
arrivals ledger (ledger.py keeps it in the store) records each content its folders have held and
when it arrived, and which file fingerprints hold which content, so an unchanged file is never
read again.

- A content never seen arrives when its bytes last changed in the source (`Entry.changed_ns`: the
  later of mtime and ctime locally, LastModified on S3). A copy that keeps an old mtime
  (`cp -p`) and a file overwritten in place are new arrivals.
- A content already recorded keeps its arrival whatever its file's times are now: renaming,
  touching or copying back an old file brings nothing back.
- The month's first look (no ledger yet: an upgrade, or a month first seen by a UI launch) reads
  every file and records each by its mtime, so the newest file wins as it did before. A file
  changed after the first look is an ordinary arrival.

The month's report is the latest arrival (ties: the newer mtime, then the name), whether or not a
file still holds it: a report that left the folder is never replaced by an older one. Reading is
bounded: a file's content cannot have arrived after its `candidate` time, so files are read
newest candidate first and the rest are left unread once the latest arrival found is at least as
late as the next candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.sources import Entry

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = 1000  # times are kept to the microsecond, what their ISO form holds

# A file's (sha256, bytes), read under the byte cap; raises RefusedInput when it cannot be read
Read = Callable[[Entry], tuple[str, int]]


def iso_ns(ns: int) -> str:
    """A time as ISO 8601 UTC, to the microsecond: `2026-10-05T08:00:00.123456Z`."""
    moment = _EPOCH + timedelta(microseconds=ns // _US)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond:06d}Z"


def ns_of(text: str) -> int:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment - _EPOCH) // timedelta(microseconds=1) * _US


def _us(ns: int) -> int:
    return ns // _US * _US


def name_of(entry: Entry) -> str:
    """A file's name within its month folder (never a path)."""
    return entry.ref.rel.rsplit("/", 1)[-1]


def fingerprint_key(entry: Entry) -> str:
    return f"{entry.ref.source}:{entry.fingerprint}"


@dataclass(frozen=True)
class Arrival:
    """One content the month has seen: when it arrived, and the file it was first seen in."""

    sha256: str
    arrived_ns: int
    modified_ns: int  # that file's mtime then: the first tie-break
    source: str
    name: str  # within the month folder
    bytes: int

    @property
    def arrived_at(self) -> str:
        return iso_ns(self.arrived_ns)

    @property
    def key(self) -> tuple[int, int, str, str]:
        """Later arrivals sort higher; ties: the newer mtime, then the name."""
        return self.arrived_ns, self.modified_ns, self.name, self.source


@dataclass(frozen=True)
class Ledger:
    """A month's arrivals. `generation` 0: none in the store yet, the month's first look.
    `first_look_ns`: when the month was first looked at, as its files' times tell it (the last
    change of a file present then); a file changed later is an ordinary arrival."""

    month: str
    generation: int = 0
    first_look_ns: int = 0
    arrivals: Mapping[str, Arrival] = field(default_factory=dict)  # by sha256
    fingerprints: Mapping[str, str] = field(default_factory=dict)  # `<source>:<fingerprint>`

    @property
    def latest(self) -> Arrival | None:
        return max(self.arrivals.values(), key=lambda a: a.key, default=None)

    def merged(self, other: Ledger) -> Ledger:
        """The union of two ledgers of the month (two writers at once): each content keeps its
        earliest arrival, the first look is the earlier one, the generation the later one."""
        arrivals = dict(other.arrivals)
        for sha, arrival in self.arrivals.items():
            if sha not in arrivals or arrival.key < arrivals[sha].key:
                arrivals[sha] = arrival
        looks = [t for t in (self.first_look_ns, other.first_look_ns) if t]
        generation = max(self.generation, other.generation)
        fingerprints = {**other.fingerprints, **self.fingerprints}
        return Ledger(self.month, generation, min(looks, default=0), arrivals, fingerprints)


def candidate(entry: Entry, first_look_ns: int) -> tuple[int, int, str, str]:
    """The arrival key a file's content gets if the month has not seen it: its mtime for a file
    that was there at the month's first look, else when its bytes last changed. Never later
    than the arrival of whatever content the file holds."""
    changed = _us(entry.changed_ns)
    at = _us(entry.mtime_ns) if changed <= first_look_ns else changed
    return at, _us(entry.mtime_ns), name_of(entry), entry.ref.source


@dataclass(frozen=True)
class Decision:
    ledger: Ledger  # with what this look read
    report: Arrival | None  # the month's report, the latest arrival (None: nothing ever)
    file: Entry | None  # a file that holds it now (None: it left every source)
    superseded: tuple[str, ...]  # the other files present (names within the month folder)
    blocked: tuple[Entry, RefusedInput] | None  # a file that could be newer, but cannot be read
    read: tuple[tuple[Entry, str], ...] = ()  # the files read in this look, with their sha256


class _Look:
    """One look at the month: what is known of each file, and what reading adds."""

    def __init__(self, ledger: Ledger, entries: Sequence[Entry], read: Read, now_ns: int):
        # On the file system's own clock: the last change of a file there at the first look
        # (a host whose clock runs ahead or behind the inbox's cannot misfile a later copy)
        latest_change = max((e.changed_ns for e in entries), default=now_ns)
        self.first_look = ledger.first_look_ns or _us(latest_change)
        self.arrivals = dict(ledger.arrivals)
        known = ((e, ledger.fingerprints.get(fingerprint_key(e))) for e in entries)
        self.holds = {e: sha for e, sha in known if sha in self.arrivals}
        self.read = read
        self.refused: list[tuple[Entry, RefusedInput]] = []
        self.done: list[tuple[Entry, str]] = []

    def key(self, entry: Entry) -> tuple[int, int, str, str]:
        return candidate(entry, self.first_look)

    def latest(self) -> Arrival | None:
        return max(self.arrivals.values(), key=lambda a: a.key, default=None)

    def look_at(self, entry: Entry) -> None:
        try:
            sha, size = self.read(entry)
        except RefusedInput as error:
            if error.code != "missing":  # gone since it was listed: not there
                self.refused.append((entry, error))
            return
        self.holds[entry] = sha
        self.done.append((entry, sha))
        at, modified, name, source = self.key(entry)
        self.arrivals.setdefault(sha, Arrival(sha, at, modified, source, name, size))


def decide(
    ledger: Ledger, entries: Sequence[Entry], read: Read, now_ns: int, listed: Collection[str]
) -> Decision:
    """The month's report among `entries` (every eligible file of the sources in `listed`) and
    what the ledger recorded. Reads only files whose fingerprint it does not know, and of those
    only the ones whose content could be the latest, except at the month's first look (every
    file, once)."""
    look = _Look(ledger, entries, read, now_ns)
    unknown = sorted((e for e in entries if e not in look.holds), key=look.key, reverse=True)
    for entry in unknown:
        best = look.latest()
        if ledger.generation and best is not None and best.key >= look.key(entry):
            break  # nothing left can have arrived later
        look.look_at(entry)
    report = look.latest()
    if report is not None and report.sha256 not in look.holds.values():
        # The latest content's files are gone; a copy with an earlier time may be left unread.
        for entry in unknown:
            if entry not in look.holds and entry.size == report.bytes:
                look.look_at(entry)
    blocked = next(
        ((e, r) for e, r in look.refused if report is None or look.key(e) > report.key), None
    )
    kept = {k: v for k, v in ledger.fingerprints.items() if k.split(":", 1)[0] not in listed}
    kept.update((fingerprint_key(e), sha) for e, sha in look.holds.items())
    recorded = Ledger(ledger.month, ledger.generation, look.first_look, look.arrivals, kept)
    file = _file_of(report, look.holds)
    others = sorted(
        _label(e, file)
        for e in entries
        if e != file and (report is None or look.holds.get(e) != report.sha256)
    )
    return Decision(recorded, report, file, tuple(others), blocked, tuple(look.done))


def _label(entry: Entry, file: Entry | None) -> str:
    """A file's name within the month folder; prefixed with its source if not the report's."""
    if file is None or entry.ref.source == file.ref.source:
        return name_of(entry)
    return f"{entry.ref.source}:{name_of(entry)}"


def _file_of(report: Arrival | None, holds: Mapping[Entry, str]) -> Entry | None:
    """The file that holds the report: the one it arrived in if still there, else the newest."""
    if report is None:
        return None
    holding = [e for e, sha in holds.items() if sha == report.sha256]
    first = (report.source, report.name)

    def preference(entry: Entry) -> tuple[bool, int, str]:
        return (entry.ref.source, name_of(entry)) == first, entry.mtime_ns, entry.ref.rel

    return max(holding, key=preference, default=None)

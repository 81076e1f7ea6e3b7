"""Which revision is the month's: one record per change, in the store, the one truth every
surface reads (`show`, the review queue, the checks, `manifest_table`, the UI's sensor).

`months/<YYYY-MM>/current/<generation:06d>.json`: generation 1 is the month's first archive,
each later one a revision that replaced it (a correction, a re-extraction, a review decision).
A generation is written once (`put_if_absent`), so of two writers that read generation N only
one makes N+1; the other learns that the month changed under it. The newest generation is the
month's current revision, and the ones before it are its chain.

The month's archive deadline is set at its first archive and copied into every later
generation: nothing that replaces a revision ever extends how long the month is kept.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from report_pipeline.core.model import keys
from report_pipeline.core.storage.store import Store

CAUSES = ("archived", "correction", "reextraction", "review", "adopted")
_RECORD_CAP = 64 * 1024


@dataclass(frozen=True)
class MonthHead:
    """The month's current revision as of one generation."""

    month: str
    generation: int
    report_id: str
    revision: str
    previous: str  # the revision it replaced ("" for the month's first)
    # archived: the month's first; correction: new report content; reextraction: a newer
    # extractor on the same content; review: a quarantine decision; adopted: a revision archived
    # before the month kept this record, taken as its current one
    cause: str
    at: str  # when it became current (ISO 8601, UTC)
    archive_delete_by: str  # the month's archive deadline, the same in every generation
    source_hash: str
    extractor_version: str

    @property
    def key(self) -> str:
        return keys.current_key(self.month, self.generation)


def head(store: Store, month: str) -> MonthHead | None:
    """The month's newest generation, or None when the month has none yet."""
    listed = [info.key for info in store.list(keys.current_prefix(month))]
    generations = [k for k in listed if keys.month_record(k)]
    return _read(store, max(generations)) if generations else None


def history(store: Store, month: str) -> list[MonthHead]:
    """Every generation of the month, oldest first (the chain that led to the current one)."""
    listed = sorted(info.key for info in store.list(keys.current_prefix(month)))
    return [_read(store, key) for key in listed if keys.month_record(key)]


def heads(store: Store) -> dict[str, MonthHead]:
    """Every month's current revision, from one listing of `months/` (the UI's sensor)."""
    newest: dict[str, str] = {}
    for info in store.list(keys.MONTHS):
        found = keys.month_record(info.key)
        if found and found[1] == "current":
            newest[found[0]] = max(newest.get(found[0], ""), info.key)
    return {month: _read(store, key) for month, key in sorted(newest.items())}


def advance(store: Store, before: MonthHead | None, after: MonthHead) -> bool:
    """Make `after` the month's current revision, if the month is still at `before` (None: it
    had no generation yet). False: another writer changed the month first."""
    generation = before.generation + 1 if before else 1
    record = MonthHead(**{**asdict(after), "generation": generation})
    payload = json.dumps(asdict(record), sort_keys=True).encode()
    return store.put_if_absent(record.key, payload)


def _read(store: Store, key: str) -> MonthHead:
    return MonthHead(**json.loads(store.get_bytes(key, _RECORD_CAP)))

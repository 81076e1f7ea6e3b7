"""The deadline index: one empty marker object per deadline, bucketed by day.

`index/<clock>/<YYYYMMDD>/<report_id>/<epoch minute>-<revision>`. The janitor lists only the day
buckets that are due, so its cost follows what has expired, not everything stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from report_pipeline.core.model import keys
from report_pipeline.core.storage.store import Store

WORK = keys.WORK_INDEX  # short clock: staged source, work objects, unfinished revisions
ARCHIVE = keys.ARCHIVE_INDEX  # long clock: an archived revision
EVIDENCE = keys.EVIDENCE_INDEX  # rejected evidence kept less than the archive (core/review/)


@dataclass(frozen=True)
class DueEntry:
    key: str
    report_id: str
    revision: str
    deadline: datetime


def record(store: Store, clock: str, deadline: datetime, report_id: str, revision: str) -> None:
    store.put_bytes(keys.deadline_key(clock, deadline, report_id, revision), b"")


def _parse(key: str) -> DueEntry:
    parsed = keys.parse_deadline_key(key)
    return DueEntry(key, parsed.report_id, parsed.revision, parsed.deadline)


def due(store: Store, clock: str, now: datetime) -> Iterator[DueEntry]:
    """Entries whose deadline is at or before `now`, oldest day first."""
    today = f"{now.astimezone(UTC):%Y%m%d}"
    for day in store.list_prefixes(clock):
        if keys.prefix_name(day) > today:
            break
        for info in store.list(day):
            entry = _parse(info.key)
            if entry.deadline <= now:
                yield entry

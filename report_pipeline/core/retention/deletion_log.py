"""The deletion log (the audit stream): one immutable JSON object per deletion. No image bytes,
no source paths. The checks that audit retention are in core/checks/."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta

from report_pipeline.core.model import keys
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.records import percentile
from report_pipeline.core.storage.store import ObjectInfo, Store


@dataclass(frozen=True)
class Deletion:
    # workdir | working_material | archive | untracked kinds (untracked.py) | partial_write |
    # superseded (a quarantine review replaced the revision: core/review/decide.py)
    kind: str
    item: str  # a revision id or a workdir's random name
    report_id: str
    revision: str
    deadline: str
    deleted_at: str
    lag_seconds: float  # deleted_at - deadline (negative: deleted early)
    bytes: int
    objects: int


def deletion(
    kind: str, item: str, report_id: str, revision: str, deadline: datetime, now: datetime,
    size: int, objects: int,
) -> Deletion:  # fmt: skip
    lag = round((now - deadline).total_seconds(), 3)
    return Deletion(kind, item, report_id, revision, iso(deadline), iso(now), lag, size, objects)


def delete_audited(
    store: Store, kind: str, report_id: str, revision: str, deadline: datetime, now: datetime,
    objects: list[ObjectInfo],
) -> Deletion | None:  # fmt: skip
    """Delete `objects` and record one audit event for them (none when there was nothing). The
    event is written first: a store that cannot take it (full, throttled) fails the call with
    nothing deleted, never a deletion the audit stream lacks; a failure after the event leaves
    the objects to the next attempt, which records them again."""
    if not objects:
        return None
    size = sum(o.size for o in objects)
    event = deletion(kind, revision, report_id, revision, deadline, now, size, len(objects))
    record(store, event)
    store.delete_many([item.key for item in objects])
    return event


def record(store: Store, event: Deletion) -> str:
    """Write the event once under a fresh random key; events are never rewritten."""
    moment = parse_iso(event.deleted_at)
    key = keys.audit_key(moment, secrets.token_hex(6))
    store.put_bytes(key, json.dumps(asdict(event), sort_keys=True).encode())
    return key


def read(store: Store, since: datetime) -> list[Deletion]:
    """Events from the day of `since` on (only those day buckets are listed)."""
    first = f"{since.astimezone(UTC):%Y%m%d}"
    events = []
    for day in store.list_prefixes(keys.AUDIT):
        if keys.prefix_name(day) < first:
            continue
        for info in store.list(day):
            events.append(Deletion(**json.loads(store.get_bytes(info.key, 1 << 20))))
    return [e for e in events if parse_iso(e.deleted_at) >= since]


def lag_summary(store: Store, now: datetime, days: int = 30) -> dict[str, float | int]:
    """Cleanup lag over the last `days` (only deletions past their deadline count as lag)."""
    lags = [max(0.0, e.lag_seconds) for e in read(store, now - timedelta(days=days))]
    return {
        "deletions_audited": len(lags),
        "cleanup_lag_p50_seconds": percentile(lags, 50),
        "cleanup_lag_p95_seconds": percentile(lags, 95),
    }

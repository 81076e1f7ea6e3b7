"""A month's arrivals ledger in the private store: `months/<YYYY-MM>/arrivals/<generation>.json`.

Written only with `Store.put_if_absent` at the next generation, so two writers never both make
one: the loser reads the winner's, merges (a union; each content keeps its earliest arrival) and
tries the next generation. The newest generation is the ledger; the `KEEP` newest are kept and
older ones deleted after a successful write. It holds names within the month folder, sha256s,
sizes and times (core/intake/arrivals.py), never bytes or paths.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from dataclasses import replace

from report_pipeline.core.intake.arrivals import Arrival, Ledger, iso_ns, ns_of
from report_pipeline.core.model import keys
from report_pipeline.core.storage.store import (
    MissingObject,
    StorageError,
    Store,
    TransientStorageError,
)

VERSION = 1
KEEP = 3  # generations kept: a reader that listed a moment ago still finds the one it chose
_CAP = 8 * 1024 * 1024
_ROUNDS = 16  # twenty concurrent `submit`s of one month settle in a few


def _generations(store: Store, month: str) -> list[int]:
    found = (keys.month_record(info.key) for info in store.list(keys.arrivals_prefix(month)))
    return sorted(g for m, kind, g in filter(None, found) if m == month and kind == "arrivals")


def load(store: Store, month: str) -> Ledger:
    """The month's newest ledger (generation 0, empty: the month was never looked at)."""
    for _ in range(_ROUNDS):
        generations = _generations(store, month)
        if not generations:
            return Ledger(month)
        try:
            data = store.get_bytes(keys.arrivals_key(month, generations[-1]), _CAP)
        except MissingObject:  # deleted as an old generation since it was listed
            continue
        return from_json(month, generations[-1], json.loads(data))
    raise TransientStorageError(f"the arrivals of {month} kept changing while read")


def commit(store: Store, base: Ledger, updated: Ledger) -> Ledger:
    """Write `updated` (what a look made of `base`) as the next generation, merged with whatever
    another writer wrote since; returns what is now the month's ledger. Nothing is written when
    nothing changed, or when the month has no arrival to record."""
    if updated == base or not updated.arrivals:
        return base
    current = updated
    for _ in range(_ROUNDS):
        generation = current.generation + 1
        data = json.dumps(to_json(current), sort_keys=True, separators=(",", ":")).encode()
        if store.put_if_absent(keys.arrivals_key(base.month, generation), data):
            _prune(store, base.month, generation)
            return replace(current, generation=generation)
        time.sleep(random.uniform(0, 0.005))  # contenders spread out; one wins each generation
        latest = load(store, base.month)
        current = updated.merged(latest)
        if current == latest:
            return latest
    raise TransientStorageError(f"the arrivals of {base.month} are still contended")


def _prune(store: Store, month: str, written: int) -> None:
    """Housekeeping after a write: one that fails leaves old generations to the next write.
    Generations count up from 1, so up to generation KEEP none is old: no listing to ask."""
    if written <= KEEP:
        return
    old = [keys.arrivals_key(month, g) for g in _generations(store, month) if g <= written - KEEP]
    if old:
        with contextlib.suppress(StorageError):
            store.delete_many(old)


def to_json(ledger: Ledger) -> dict:
    arrivals = {
        sha: {"arrived_at": a.arrived_at, "modified_at": iso_ns(a.modified_ns),
              "source": a.source, "name": a.name, "bytes": a.bytes}
        for sha, a in ledger.arrivals.items()
    }  # fmt: skip
    return {"v": VERSION, "month": ledger.month, "first_look": iso_ns(ledger.first_look_ns),
            "arrivals": arrivals, "fingerprints": dict(ledger.fingerprints)}  # fmt: skip


def from_json(month: str, generation: int, data: dict) -> Ledger:
    arrivals = {
        sha: Arrival(sha, ns_of(a["arrived_at"]), ns_of(a["modified_at"]), a["source"], a["name"],
                     a["bytes"])
        for sha, a in data["arrivals"].items()
    }  # fmt: skip
    return Ledger(month, generation, ns_of(data["first_look"]), arrivals, data["fingerprints"])

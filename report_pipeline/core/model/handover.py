"""What a step just wrote to the store, handed to the next step of the same run when it runs in
the same process (the in-process executor), instead of read back: on S3 a round trip the run
would wait for, between the two steps. An extraction's outcomes go to its archive step; the
staged source and the draws that staging wrote with its plan go to the extractions of that plan.

The outcomes file is still written and stays the record: the archive step reads it whenever
the hand-over has nothing for it (another process, a retry, a re-execution, a local store, a
process restarted). A hand-over matches one extraction exactly (its outcomes key, start time,
lease and attempt), is taken once, and at most `HELD` wait at a time (the oldest go first).
The same holds for a plan's source and draws (the objects stay, read whenever nothing was
handed over): they match one plan exactly (its revision and the time it was queued), are kept
for every task of that plan, and only the latest plan's are kept, if its source is at most
`SOURCE_BYTES`.
The manifest a run's publishing left current goes to that run's `manifest_table`, which then
writes its table beside the check that the month has not moved on (core/archive/table.py): it
matches the manifest's key and the generation of the month's record that names it, and is
taken once; the object stays the record, read whenever nothing was handed over.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from report_pipeline.core.model.messages import ExtractedTask, PageTask
from report_pipeline.core.model.records import Manifest, OutcomeRecord
from report_pipeline.core.model.store_json import dumps, loads, outcomes_from_bytes
from report_pipeline.core.storage.parallel_io import io_workers
from report_pipeline.core.storage.store import Store

HELD = 64  # extractions whose archive step has not run yet (a run's page groups, in one process)
SOURCE_BYTES = 64 * 1024 * 1024  # a larger staged source is read back from the store

_lock = threading.Lock()
_held: OrderedDict[tuple, bytes] = OrderedDict()


def _which(extracted: ExtractedTask) -> tuple:
    return (extracted.outcomes_key, extracted.started_at, extracted.lease_until,
            extracted.attempts)  # fmt: skip


def hand_over(store: Store, extracted: ExtractedTask, written: bytes) -> None:
    """Keep the outcomes file's bytes (`written` to `extracted.outcomes_key`) for the task's
    archive step, when reading them back costs a wait (a store with `io_workers`, i.e. S3)."""
    if io_workers(store) <= 1:
        return
    with _lock:
        _held[_which(extracted)] = written
        while len(_held) > HELD:
            _held.popitem(last=False)


def take(extracted: ExtractedTask) -> list[OutcomeRecord] | None:
    """The outcomes handed over by exactly this extraction, once; None: read the file."""
    with _lock:
        written = _held.pop(_which(extracted), None)
    return None if written is None else outcomes_from_bytes(written)


_plan: tuple[tuple[str, str], bytes, bytes] | None = None  # (revision, queued_at), source, draws


def hand_over_plan(store: Store, task: PageTask, source: Path, draws: bytes) -> None:
    """Keep the staged `source` (a local copy of what staging stored) and the `draws` bytes it
    wrote with the plan `task` is of, for that plan's extractions (a store with `io_workers`)."""
    global _plan
    if io_workers(store) <= 1 or source.stat().st_size > SOURCE_BYTES:
        return
    data = source.read_bytes()
    with _lock:
        _plan = (task.ref.revision, task.queued_at), data, draws


def take_plan(task: PageTask) -> tuple[bytes, bytes] | None:
    """(staged source, draws bytes) of exactly `task`'s plan; None: read them from the store."""
    with _lock:
        if _plan is None or _plan[0] != (task.ref.revision, task.queued_at):
            return None
        return _plan[1], _plan[2]


_manifest: tuple[tuple[str, int], bytes] | None = None  # (key, generation), the manifest's JSON


def hand_over_manifest(store: Store, key: str, generation: int, manifest: Manifest) -> None:
    """Keep `manifest` (stored at `key`, named by generation `generation` of the month's
    record) for this run's manifest_table, when reading it back costs a wait (S3)."""
    global _manifest
    if io_workers(store) <= 1:
        return
    with _lock:
        _manifest = (key, generation), dumps(manifest)


def take_manifest(key: str, generation: int) -> Manifest | None:
    """The manifest handed over for exactly (`key`, `generation`), once, as a read of its
    object returns it; None: read it from the store."""
    global _manifest
    with _lock:
        if _manifest is None or _manifest[0] != (key, generation):
            return None
        data, _manifest = _manifest[1], None
    return loads(data)

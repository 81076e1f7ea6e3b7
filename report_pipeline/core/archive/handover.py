"""An extraction's outcomes, handed to the archive step of the same task when it runs in the
same process (the in-process executor), instead of read back from the store where extraction
just wrote them: on S3 a round trip the run would wait for, between the two steps.

The outcomes file is still written and stays the record: the archive step reads it whenever
the hand-over has nothing for it (another process, a retry, a re-execution, a local store, a
process restarted). A hand-over matches one extraction exactly (its outcomes key, start time,
lease and attempt), is taken once, and at most `HELD` wait at a time (the oldest go first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from report_pipeline.core.model.messages import ExtractedTask
from report_pipeline.core.model.records import OutcomeRecord
from report_pipeline.core.model.store_json import outcomes_from_bytes
from report_pipeline.core.storage.parallel_io import io_workers
from report_pipeline.core.storage.store import Store

HELD = 64  # extractions whose archive step has not run yet (a run's page groups, in one process)

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

"""A step's op outputs uploaded side by side, each stored before the step can succeed.

Dagster hands a step's outputs to the IO manager one after another, each `handle_output`
returning once its object is stored: on S3, a round trip the run waits for per output
(stage_report's staged report and each page group, bench.s3_latency). An op that yields several
outputs inside `uploaded_together(context)` lets the production IO manager
(s3_io_manager.py) start each upload and return; leaving the block waits for every one of them
and raises the first failure, so the step still fails (and its retry policy still applies, as
to a failed `handle_output`) unless all of them are stored. Leaving the block happens inside the
op, before Dagster can record the step's success: a re-execution from failure, a retry or a step
in another process finds every output of a successful step in the bucket, as before.

Outside the block (every other op, the asset's output, a local IO manager) nothing changes: the
upload happens in `handle_output`. Dagster calls `handle_output` in the thread that runs the
op's generator, while the generator waits at its `yield`; the block is keyed by the run and
the step's key, which is all an `OutputContext` and an op's context both know.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import dagster as dg

AT_ONCE = 16  # uploads in flight at once (a report's page groups, staging's report)

_lock = threading.Lock()
_open: dict[tuple[str, str], tuple[ThreadPoolExecutor, list[Future]]] = {}


def step_key(context: dg.OpExecutionContext) -> str:
    """The step's key as an OutputContext gives it: the op's handle, and its mapping key for a
    mapped step (`report_manifest.archive_pages[pages_0001_0140]`)."""
    handle, mapping = str(context.op_handle), context.get_mapping_key()
    return f"{handle}[{mapping}]" if mapping else handle


@contextmanager
def uploaded_together(context: dg.OpExecutionContext) -> Iterator[None]:
    """The outputs yielded inside the block are uploaded side by side (module docstring).
    Leaving it waits for every upload; the block's own failure wins, once they have ended."""
    key = (context.run_id, step_key(context))
    pool, futures = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="op-output"), []
    with _lock:
        _open[key] = (pool, futures)
    try:
        yield
    finally:
        with _lock:
            del _open[key]
        pool.shutdown(wait=True)
    for future in futures:
        future.result()


def upload(run_id: str, step: str, put: Callable[[], object]) -> None:
    """For the IO manager: `put` (an output's upload) beside the step's others when the step
    is inside `uploaded_together`, else now, in place."""
    with _lock:
        found = _open.get((run_id, step))
    if found is None:
        put()
        return
    pool, futures = found
    futures.append(pool.submit(put))


def open_steps() -> int:
    """Steps inside `uploaded_together` in this process (for tests)."""
    with _lock:
        return len(_open)

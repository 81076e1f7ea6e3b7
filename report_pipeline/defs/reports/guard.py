"""The one place that decides retry versus dead letter, and says it in Dagster's language.

Only a transient storage error is ever re-raised for the op's RetryPolicy, while attempts remain
(`retries`); refused input, permanent storage errors, exhausted retries and unexpected errors
are dead letters that Dagster will not retry (`allow_retries=False`), visible as a failed step to
re-execute from failure. A full disk is one of its own (reason `disk_full`, naming the root by its
setting): neither retried nor a refusal, re-executed from failure once there is space again. Bad
image bytes never get here: the worker quarantines them in place.

One failure is not ours to decide: Dagster's instance database failing under a step (Postgres
restarted or briefly down, sqlite locked) while Dagster writes the step's events. The step fails
in Dagster's own code, a step failure, which run retries skip (`retry_on_asset_or_op_failure:
false` in dagster.yaml, so that dead letters wait for a person) and which no RetryPolicy covers,
so the month stayed failed. `retry_after_instance_outage`, a failure hook on every report op,
marks such a run with Dagster's own `dagster/retry_on_asset_or_op_failure` tag before the run
fails, and run retries then re-execute it from failure like a crashed worker (at most
`max_retries` times). Any other step failure is left as it is.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import dagster as dg
import sqlalchemy.exc

from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.storage.parallel_io import meanwhile
from report_pipeline.core.storage.store import DiskFull, StorageError

T = TypeVar("T")
MAX_TRIES = 4  # attempts of a step at a transient storage error, the first included

STORAGE_RETRY = dg.RetryPolicy(
    max_retries=MAX_TRIES - 1,
    delay=0.5,
    backoff=dg.Backoff.EXPONENTIAL,
    jitter=dg.Jitter.PLUS_MINUS,
)


def retries(error: StorageError, tries: int, max_tries: int = MAX_TRIES) -> bool:
    """Whether attempt `tries` (1: the first) is retried: a transient error, attempts left."""
    return error.transient and tries < max_tries


def owner(context: dg.OpExecutionContext) -> str:
    return f"{context.run_id}/{context.op_handle}"


def guarded(context: dg.OpExecutionContext, work: Callable[[], T]) -> T:
    tries = context.retry_number + 1
    try:
        return work()
    except RefusedInput as refused:
        raise dg.Failure(
            description=f"report refused ({refused.code}): {refused.message}",
            metadata={"reason": refused.code},
            allow_retries=False,
        ) from None
    except DiskFull as full:
        raise dg.Failure(
            description=f"disk full, not retried: {full}",
            metadata={"reason": "disk_full", "root": full.root, "attempts": tries},
            allow_retries=False,
        ) from None
    except StorageError as error:
        if retries(error, tries):
            context.log.warning(f"transient storage error on attempt {tries}; retrying: {error}")
            raise
        raise dg.Failure(
            description=f"dead letter after {tries} attempt(s): {error}",
            metadata={"reason": "storage", "attempts": tries},
            allow_retries=False,
        ) from error
    except dg.Failure:
        raise
    except Exception as error:
        raise dg.Failure(
            description=f"dead letter: unexpected {type(error).__name__}",
            metadata={"reason": "unexpected", "attempts": tries},
            allow_retries=False,
        ) from error


RETRY_ON_FAILURE_TAG = "dagster/retry_on_asset_or_op_failure"  # run retries' own override
OUTAGE_ERRORS = (
    sqlalchemy.exc.OperationalError,  # the server went away, refused, or is restarting
    sqlalchemy.exc.InterfaceError,  # the connection was closed under the statement
    sqlalchemy.exc.DisconnectionError,
    sqlite3.OperationalError,  # "database is locked"
)
DRIVER_OUTAGES = {("psycopg2", "OperationalError"), ("psycopg2", "InterfaceError")}
TAG_TRIES = 3  # the database answered the step's failure event: it is back, or nearly


def instance_outage(error: BaseException | None) -> bool:
    """Whether `error`, or an error it was raised from, is the database failing (not an answer
    from it: a constraint or a bad statement is not an outage)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        kind = type(error)
        if isinstance(error, OUTAGE_ERRORS):
            return True
        if (kind.__module__.split(".")[0], kind.__name__) in DRIVER_OUTAGES:
            return True
        error = error.__cause__ or error.__context__
    return False


def _set_retry_tag(context: dg.HookContext, value: str) -> bool:
    for attempt in range(TAG_TRIES):
        try:
            context.instance.add_run_tags(context.run_id, {RETRY_ON_FAILURE_TAG: value})
            return True
        except Exception:  # noqa: BLE001 - still down: try again, then leave it to a person
            if attempt < TAG_TRIES - 1:
                time.sleep(2**attempt)
    return False


@dg.failure_hook(name="retry_after_instance_outage")
def retry_after_instance_outage(context: dg.HookContext) -> None:
    """A step failed because Dagster's database failed under it: let run retries re-execute
    the run from failure (module docstring). A retry inherits its parent's tags: a dead letter
    in a run that carries the tag turns it off, and wins over an outage in the same run, so a
    dead letter still waits for a person."""
    try:
        run = context.instance.get_run_by_id(context.run_id)
    except Exception:  # noqa: BLE001 - the database may still be failing: decide without it
        run = None
    tagged = run.tags.get(RETRY_ON_FAILURE_TAG) if run is not None else None
    if not instance_outage(context.op_exception):
        if tagged == "true":
            _set_retry_tag(context, "false")
        return
    if tagged == "false" or not _set_retry_tag(context, "true"):
        return
    context.log.warning(
        f"{context.op.name} failed because Dagster's database failed under it "
        f"({type(context.op_exception).__name__}); run retries will re-execute it from failure"
    )


@contextmanager
def guarded_beside(
    context: dg.OpExecutionContext, store: Any, write: Callable[[], object]
) -> Iterator[None]:
    """`write` (the step's last storage I/O) run beside the `with` block, which yields the
    step's output: on S3 the output's upload by the IO manager and `write` cost one round trip's
    wait, not two (core/storage/parallel_io.py, `meanwhile`). Leaving the block waits for
    `write`, before the step can succeed, and its failure is decided here as `guarded` decides
    it, in the op's thread; the block's own failure wins."""
    block = meanwhile(store, write)
    block.__enter__()
    try:
        yield
    except BaseException:
        block.__exit__(*sys.exc_info())
        raise
    guarded(context, lambda: block.__exit__(None, None, None))

"""The one place that decides retry versus dead letter, and says it in Dagster's language.

Only a transient storage error is ever re-raised for the op's RetryPolicy, while attempts remain
(`retries`); refused input, permanent storage errors, exhausted retries and unexpected errors
are dead letters that Dagster will not retry (`allow_retries=False`), visible as a failed step to
re-execute from failure. A full disk is one of its own (reason `disk_full`, naming the root by its
setting): neither retried nor a refusal, re-executed from failure once there is space again. Bad
image bytes never get here: the worker quarantines them in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import dagster as dg

from report_pipeline.core.intake.intake import RefusedInput
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

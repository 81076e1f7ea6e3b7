"""Retry versus dead letter: only a transient storage error is retried, and only a bounded number
of times (the ops' behaviour under faults is in test_gates.py and faults/)."""

from types import SimpleNamespace

import dagster as dg
import pytest

from report_pipeline.core.storage.store import (
    STORE_ROOT,
    DiskFull,
    PermanentStorageError,
    TransientStorageError,
)
from report_pipeline.defs.reports.guard import MAX_TRIES, guarded, retries


@pytest.mark.parametrize("tries", range(1, MAX_TRIES + 3))
def test_a_transient_error_is_retried_until_the_attempts_run_out(tries):
    assert retries(TransientStorageError("timeout"), tries) == (tries < MAX_TRIES)


@pytest.mark.parametrize("tries", [1, MAX_TRIES])
def test_a_permanent_error_is_never_retried(tries):
    assert not retries(PermanentStorageError("denied"), tries)


def test_a_storage_that_never_recovers_is_tried_max_tries_times():
    tries = 1
    while retries(TransientStorageError("timeout"), tries):
        tries += 1
    assert tries == MAX_TRIES


def test_a_full_disk_is_a_dead_letter_of_its_own_on_the_first_attempt():
    def work():
        raise DiskFull(STORE_ROOT, "archive/inbox-2026-10/r1/images/abc.png")

    with pytest.raises(dg.Failure) as failed:
        guarded(SimpleNamespace(retry_number=0), work)
    assert not failed.value.allow_retries
    assert failed.value.description.startswith("disk full, not retried: store.root is full")
    metadata = {k: v.value for k, v in failed.value.metadata.items()}
    assert metadata == {"reason": "disk_full", "root": STORE_ROOT, "attempts": 1}

"""Retry versus dead letter: only a transient storage error is retried, and only a bounded number
of times (the ops' behaviour under faults is in test_gates.py and faults/)."""

import pytest

from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError
from report_pipeline.defs.reports.guard import MAX_TRIES, retries


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

import itertools
import random

import pytest

from report_pipeline.core.policy import MAX_TRIES, Action, Attempt, backoff_seconds, next_action

CASES = [
    # status, transient, validation_ok, tries, expected
    ("stored", False, True, 1, Action.ACK),
    ("stored", False, True, MAX_TRIES, Action.ACK),
    ("stored", True, True, 1, Action.ACK),
    ("stored", False, False, 1, Action.QUARANTINE),
    ("timeout", True, False, 1, Action.QUARANTINE),
    ("timeout", True, True, 1, Action.RETRY),
    ("timeout", True, True, MAX_TRIES - 1, Action.RETRY),
    ("timeout", True, True, MAX_TRIES, Action.DEAD_LETTER),
    ("denied", False, True, 1, Action.DEAD_LETTER),
]


@pytest.mark.parametrize(("status", "transient", "valid", "tries", "expected"), CASES)
def test_decision_table_rows(status, transient, valid, tries, expected):
    assert next_action(Attempt(status, transient, valid), tries) == expected


@pytest.mark.parametrize(
    ("status", "transient", "valid", "tries"),
    list(
        itertools.product(
            ["stored", "timeout", "denied"], [True, False], [True, False], range(1, 7)
        )
    ),
)
def test_every_combination_follows_the_rules(status, transient, valid, tries):
    action = next_action(Attempt(status, transient, valid), tries)
    if not valid:
        assert action == Action.QUARANTINE  # bad bytes are never retried
    elif status == "stored":
        assert action == Action.ACK
    elif transient and tries < MAX_TRIES:
        assert action == Action.RETRY
    else:
        assert action == Action.DEAD_LETTER


def test_retries_are_bounded_for_a_storage_that_never_recovers():
    tries = 1
    while next_action(Attempt("timeout", True, True), tries) == Action.RETRY:
        tries += 1
    assert tries == MAX_TRIES


def test_backoff_grows_exponentially_with_jitter_and_a_cap():
    rng = random.Random(1)
    for tries in range(1, 12):
        ceiling = min(30.0, 0.5 * 2 ** (tries - 1))
        samples = [backoff_seconds(tries, rng=rng) for _ in range(200)]
        assert all(0 <= s <= ceiling for s in samples)
        assert max(samples) > ceiling * 0.8  # jitter spreads over the whole window

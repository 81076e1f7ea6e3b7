"""The decision table from the design review: what to do with one attempt at one child task.

Retries are for transport and transient resource failures only. Bad bytes are quarantined at
once; an exhausted or permanent failure is a dead letter.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum

MAX_TRIES = 4


class Action(StrEnum):
    ACK = "ack"
    RETRY = "retry"
    QUARANTINE = "quarantine"
    DEAD_LETTER = "dead_letter"


@dataclass(frozen=True)
class Attempt:
    status: str  # "stored" when the write went through, otherwise what went wrong
    transient: bool
    validation_ok: bool


def next_action(attempt: Attempt, tries: int, max_tries: int = MAX_TRIES) -> Action:
    """`tries` counts attempts made so far, this one included (1 on the first attempt)."""
    if attempt.validation_ok and attempt.status == "stored":
        return Action.ACK
    if not attempt.validation_ok:
        return Action.QUARANTINE
    if attempt.transient and tries < max_tries:
        return Action.RETRY
    return Action.DEAD_LETTER


def backoff_seconds(
    tries: int, base: float = 0.5, cap: float = 30.0, rng: random.Random | None = None
) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(cap, base * 2**(tries-1))]."""
    ceiling = min(cap, base * (2 ** max(0, tries - 1)))
    return (rng or random).uniform(0, ceiling)

"""One run per report revision: an atomic claim in the store, taken before a run is launched
(`submit`, the sensor) or, for UI launches and backfills, when the run learns its revision.

Dagster-free. A claim is never modified, only created, so a store needs one atomic primitive,
`Store.put_if_absent` (local: link(2) of a complete file; S3: PutObject with `If-None-Match: *`):

    claims/<revision>/<generation>.json      who claimed, when, and a random token
    claims/<revision>/<generation>.released  the claimer gave up before a run existed

The holder of a revision's claim is its highest generation. The run launched for it carries the
token as the `report_pipeline/claim` tag (re-executions and automatic retries inherit it), so the
holding run, and its status, is found through the tag. A claim whose claimer died before any run
carried the token is stale after `STALE_SECONDS`; it is taken over by creating the next
generation, which exactly one contender can do. A claim held by a failed run stays with that run:
it is re-executed from failure (or retried automatically), never silently launched again.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from report_pipeline.core.model import keys
from report_pipeline.core.storage.store import Store, TransientStorageError

CLAIM_TAG = "report_pipeline/claim"
STALE_SECONDS = 600  # a claimer launches within seconds; a sensor's run exists within its tick
LAUNCHING = "LAUNCHING"  # the holder's status while no run carries the claim yet
FAILED = ("FAILURE", "CANCELED")
# The run that holds a claim, best first: one that succeeded, else one under way.
PREFERRED = ("SUCCESS", "STARTED", "STARTING", "QUEUED", "NOT_STARTED")
_CAP = 64 * 1024
_ROUNDS = 5

# claim token → (run id, status) of every run carrying it, newest first
RunsOf = Callable[[str], Sequence[tuple[str, str]]]


@dataclass(frozen=True)
class Claim:
    revision: str
    generation: int
    token: str
    claimer: str  # "submit", "sensor" or "run" (a UI launch or backfill, at staging)
    claimed_at: float  # seconds since the epoch
    run_id: str = ""  # known when a run claims its own revision
    released: bool = False


@dataclass(frozen=True)
class Outcome:
    won: bool
    claim: Claim
    run_id: str = ""  # the holding run; "" while its claimer is still launching it
    status: str = ""  # that run's Dagster status, or LAUNCHING

    @property
    def failed(self) -> bool:
        return self.status in FAILED

    def describe(self) -> str:
        """Why nothing is launched: who holds the revision, in one line."""
        revision = self.claim.revision
        if self.status == LAUNCHING:
            return f"revision {revision} is being launched by {self.claim.claimer} (claimed)"
        if self.failed:
            return (
                f"revision {revision}: its run {self.run_id} ended {self.status}; re-execute it "
                "from failure (crashed runs are retried automatically), nothing new is launched"
            )
        return f"revision {revision} already has run {self.run_id} ({self.status})"


def current(store: Store, revision: str) -> Claim | None:
    """The revision's claim (its highest generation), or None if it was never claimed."""
    generations = [
        keys.claim_generation(info.key)
        for info in store.list(keys.claims_prefix(revision))
        if info.key.endswith(".json")
    ]
    if not generations:
        return None
    top = max(generations)
    data = json.loads(store.get_bytes(keys.claim_key(revision, top), _CAP))
    released = store.exists(keys.claim_key(revision, top, "released"))
    return Claim(**{**data, "released": released})


def holder(claim: Claim, runs_of: RunsOf) -> tuple[str, str]:
    """(run id, status) of the run holding `claim`, or ("", LAUNCHING) if none carries it yet."""
    runs = list(runs_of(claim.token))
    for status in PREFERRED:
        for run_id, run_status in runs:
            if run_status == status:
                return run_id, status
    return runs[0] if runs else ("", LAUNCHING)


def acquire(
    store: Store, revision: str, claimer: str, runs_of: RunsOf, now: float | None = None,
    run_id: str = "", stale_seconds: float = STALE_SECONDS, read: tuple[Claim | None] = (),
) -> Outcome:  # fmt: skip
    """Take the revision's claim, or say who holds it. Atomic: of any number of concurrent
    callers (threads, processes, hosts sharing the store), exactly one wins a generation.
    `read`: (the claim the caller just read, or None to try the first generation unread,),
    used for the first round instead of reading it; a claim made meanwhile (or a generation that
    exists already) makes the round's `put_if_absent` lose, and the next round reads."""
    now = time.time() if now is None else now
    for round_ in range(_ROUNDS):
        top = read[0] if read and not round_ else current(store, revision)
        if top is not None and not top.released:
            run, status = holder(top, runs_of)
            if status != LAUNCHING or now - top.claimed_at < stale_seconds:
                return Outcome(False, top, run or top.run_id, status)
        generation = top.generation + 1 if top else 1  # stale or released: the next one
        claim = Claim(revision, generation, secrets.token_hex(8), claimer, now, run_id)
        data = json.dumps(asdict(claim)).encode()
        if store.put_if_absent(keys.claim_key(revision, generation), data):
            return Outcome(True, claim, run_id, LAUNCHING)
    raise TransientStorageError(f"claim of revision {revision} still contended")


def release(store: Store, claim: Claim) -> None:
    """The claimer launched nothing (the launch failed): the next claimer may take over now."""
    store.put_if_absent(keys.claim_key(claim.revision, claim.generation, "released"), b"")


def await_run(outcome: Outcome, runs_of: RunsOf, timeout: float = 15.0) -> Outcome:
    """A claim still being launched by another claimer: wait (briefly) for its run to appear."""
    deadline = time.monotonic() + timeout
    while outcome.status == LAUNCHING and time.monotonic() < deadline:
        time.sleep(0.25)
        run, status = holder(outcome.claim, runs_of)
        outcome = Outcome(False, outcome.claim, run, status)
    return outcome


def claim_in_run(
    store: Store, revision: str, run_id: str, run_token: str, runs_of: RunsOf,
    now: float | None = None, ancestors: tuple[str, ...] = (),
) -> Outcome:  # fmt: skip
    """Inside a run that has learnt its revision. Intake's run (and any re-execution of it)
    carries the claim's token and holds it; a UI launch or backfill tries to take the claim,
    first as the revision's first claim (one request, no read, when nobody claimed it). A
    re-execution (`ancestors`: the runs it re-executes) holds the claim one of them took, even
    if that run failed before it could tag itself with the token."""
    if not run_token and not ancestors:
        return acquire(store, revision, "run", runs_of, now, run_id, read=(None,))
    top = current(store, revision)
    mine = top is not None and (
        (run_token and top.token == run_token) or (top.run_id and top.run_id in ancestors)
    )
    if mine and not top.released:
        return Outcome(True, top, run_id, "STARTED")
    return acquire(store, revision, "run", runs_of, now, run_id, read=(top,))

"""Revision claims on a real LocalStore and on S3Store (moto server): one winner among concurrent
claimers (threads; processes on LocalStore), stale claims taken over by exactly one contender,
failed holders kept."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from report_pipeline.core.intake import claims
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.slow

REVISION = "r" * 64
T0 = 1_800_000_000.0


@pytest.fixture
def store(any_store):
    """Every test here runs on LocalStore and on S3Store (moto's S3 server on loopback)."""
    return any_store


def nothing(_token: str) -> list[tuple[str, str]]:
    return []  # no run carries the token yet


def race(store: LocalStore, contenders: int, now: float) -> list[claims.Outcome]:
    barrier = threading.Barrier(contenders)

    def claim(_: int) -> claims.Outcome:
        barrier.wait()
        return claims.acquire(store, REVISION, "submit", nothing, now)

    with ThreadPoolExecutor(contenders) as pool:
        return list(pool.map(claim, range(contenders)))


def _create(root: str, start, results) -> None:
    start.wait()
    results.put(LocalStore(root).put_if_absent("claims/x/000001.json", b"{}"))


def test_put_if_absent_has_exactly_one_winner_among_processes(tmp_path: Path):
    context = multiprocessing.get_context("fork")
    start, results = context.Event(), context.Queue()
    workers = [context.Process(target=_create, args=(str(tmp_path), start, results))
               for _ in range(8)]  # fmt: skip
    for worker in workers:
        worker.start()
    start.set()
    won = [results.get(timeout=30) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert sorted(won) == [False] * 7 + [True]
    assert LocalStore(tmp_path).get_bytes("claims/x/000001.json", 10) == b"{}"
    assert [p.name for p in (tmp_path / "claims" / "x").iterdir()] == ["000001.json"]


def test_twenty_concurrent_claimers_one_winner_the_rest_see_it(store: LocalStore):
    outcomes = race(store, 20, T0)
    (winner,) = [o for o in outcomes if o.won]
    losers = [o for o in outcomes if not o.won]
    assert len(losers) == 19 and {o.claim.token for o in losers} == {winner.claim.token}
    assert {o.status for o in losers} == {claims.LAUNCHING}
    assert "is being launched by submit" in losers[0].describe()


def test_a_stale_claim_without_a_run_is_taken_over_by_exactly_one_contender(store: LocalStore):
    dead = claims.acquire(store, REVISION, "submit", nothing, T0)  # the claimer dies here
    early = claims.acquire(store, REVISION, "sensor", nothing, T0 + claims.STALE_SECONDS - 1)
    assert not early.won and early.claim == dead.claim  # not stale yet
    outcomes = race(store, 10, T0 + claims.STALE_SECONDS + 1)
    (winner,) = [o for o in outcomes if o.won]
    assert winner.claim.generation == 2 and winner.claim.token != dead.claim.token
    assert claims.current(store, REVISION) == winner.claim


def test_an_old_claim_whose_run_exists_is_never_stale_and_a_failed_run_keeps_it(
    store: LocalStore,
):
    first = claims.acquire(store, REVISION, "submit", nothing, T0)
    runs = {first.claim.token: [("run-1", "FAILURE")]}
    later = claims.acquire(store, REVISION, "submit", lambda t: runs.get(t, []), T0 + 10**6)
    assert (later.won, later.run_id, later.failed) == (False, "run-1", True)
    assert "its run run-1 ended FAILURE; re-execute it from failure" in later.describe()
    runs[first.claim.token].insert(0, ("run-2", "QUEUED"))  # an automatic retry inherits the tag
    retried = claims.acquire(store, REVISION, "submit", lambda t: runs.get(t, []), T0 + 10**6)
    assert (retried.won, retried.run_id, retried.status) == (False, "run-2", "QUEUED")


def test_a_released_claim_is_free_at_once(store: LocalStore):
    first = claims.acquire(store, REVISION, "submit", nothing, T0)
    claims.release(store, first.claim)  # its launch failed
    again = claims.acquire(store, REVISION, "submit", nothing, T0 + 1)
    assert again.won and again.claim.generation == 2


def test_a_run_holds_the_claim_its_intake_took_and_a_ui_launch_takes_a_free_one(
    store: LocalStore,
):
    intake = claims.acquire(store, REVISION, "sensor", nothing, T0)
    runs = {intake.claim.token: [("run-s", "STARTED")]}
    mine = claims.claim_in_run(store, REVISION, "run-s", intake.claim.token, runs.get)
    assert mine.won and mine.claim == intake.claim
    ui = claims.claim_in_run(store, REVISION, "run-ui", "", lambda t: runs.get(t, []))
    assert (ui.won, ui.run_id) == (False, "run-s")
    other = "o" * 64
    free = claims.claim_in_run(store, other, "run-ui", "", nothing)
    assert free.won and free.claim.run_id == "run-ui" and free.claim.claimer == "run"


def test_a_re_execution_holds_the_claim_its_failed_parent_took_before_tagging_itself(store):
    """A UI launch took the claim and failed (its database went away) before tagging itself
    with the token: its re-execution, which carries no token, still holds the claim; a run of
    another lineage does not, and the failed holder keeps it."""
    parent = claims.claim_in_run(store, REVISION, "run-ui", "", nothing, T0)
    assert parent.won and parent.claim.run_id == "run-ui"
    failed = {parent.claim.token: [("run-ui", "FAILURE")]}
    child = claims.claim_in_run(store, REVISION, "run-retry", "", failed.get, T0 + 60,
                                ancestors=("run-ui",))  # fmt: skip
    assert (child.won, child.claim) == (True, parent.claim)
    grandchild = claims.claim_in_run(store, REVISION, "run-retry-2", "", failed.get, T0 + 90,
                                     ancestors=("run-retry", "run-ui"))  # fmt: skip
    assert grandchild.won and grandchild.claim == parent.claim
    other = claims.claim_in_run(store, REVISION, "run-other", "", failed.get, T0 + 120,
                                ancestors=("run-unrelated",))  # fmt: skip
    assert (other.won, other.run_id, other.status) == (False, "run-ui", "FAILURE")

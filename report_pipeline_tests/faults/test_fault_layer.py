"""The fault layer itself (devstack/faults.py) and how the test code location puts it in front
of either deployment's store."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter

import dagster as dg
import pytest

from devstack.faults import (
    FAULTS_ENV,
    FaultPlan,
    FaultyStore,
    FaultyStoreResource,
    faults_from_environment,
    parse_faults,
    with_faults,
    with_store_faults,
)
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError

pytestmark = pytest.mark.live


def test_a_spec_parses_into_a_typed_plan_and_empty_means_no_faults():
    assert parse_faults("") is None and parse_faults(" , ") is None
    plan = parse_faults("transient=0.2, seed=7,permanent=staged/*,permanent=a/b,latency_ms=1.5")
    assert plan == FaultPlan(0.2, ("staged/*", "a/b"), 1.5, 7, 8)
    assert parse_faults("window=3,journal=/tmp/f.jsonl") == FaultPlan(
        window=3, journal="/tmp/f.jsonl"
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("transient=1.5", "transient=1.5 is not in 0..1"),
        ("rate=0.2", "'rate=0.2' is not one of after, counter, failures, hold_s, journal,"),
        ("transient", "'transient' is not one of"),
        ("seed=x", "seed='x' is not a number"),
        ("window=0", "window >= 1"),
        ("pause=archive/*", "pause= and signal= go together"),
    ],
)
def test_a_bad_spec_is_refused_with_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match="storage faults: ") as raised:
        parse_faults(spec)
    assert message in str(raised.value)


def test_without_a_spec_the_store_is_returned_untouched(tmp_path):
    store = LocalStore(tmp_path)
    assert with_faults(store, "") is store


def test_permanent_faults_hit_every_call_on_matching_keys_only(any_store):
    store = with_faults(any_store, "permanent=archive/*/images/*")
    store.put_bytes("archive/r/plan.json", b"{}")
    for _ in range(3):  # every time, never cleared by a retry
        with pytest.raises(PermanentStorageError, match="injected permanent fault: put_if_absent"):
            store.put_if_absent("archive/r/images/a.png", b"x")
    with pytest.raises(PermanentStorageError):
        store.delete_many(["archive/r/plan.json", "archive/r/images/a.png"])
    assert store.get_bytes("archive/r/plan.json", 10) == b"{}"
    assert [o.key for o in store.list("archive/")] == ["archive/r/plan.json"]


def test_a_faulty_session_fails_one_call_and_a_retry_draws_again(tmp_path):
    plan = FaultPlan(transient=1.0, window=2, seed=3)
    store = FaultyStore(LocalStore(tmp_path), plan, session="2025-01/op/0", scope="run-a")
    calls = outcomes(store)
    assert calls.count("fault") == 1  # one fault per session, its k-th call (k <= window)
    again = FaultyStore(LocalStore(tmp_path), plan, session="2025-01/op/0", scope="run-a")
    assert outcomes(again) == ["ok"] * 3  # another store of the same session: no second fault
    other_run = FaultyStore(LocalStore(tmp_path), plan, session="2025-01/op/0", scope="run-b")
    assert outcomes(other_run) == calls  # same name and seed: the same call fails in any run
    retry = FaultyStore(LocalStore(tmp_path), plan, session="2025-01/op/1", scope="run-a")
    assert outcomes(retry).count("fault") == 1  # a new attempt draws again (here: rate 1)


def outcomes(store: FaultyStore) -> list[str]:
    found = []
    for key in ("a", "b", "c"):
        try:
            store.exists(key)
            found.append("ok")
        except TransientStorageError:
            found.append("fault")
    return found


def test_the_transient_rate_is_the_share_of_sessions_that_fault(tmp_path):
    plan = FaultPlan(transient=0.2, window=1, seed=11)
    faulted = 0
    for _ in range(2000):
        try:
            FaultyStore(LocalStore(tmp_path), plan).exists("k")
        except TransientStorageError:
            faulted += 1
    assert 0.17 < faulted / 2000 < 0.23


def test_a_fault_strikes_anywhere_in_the_window_and_not_in_a_session_that_ends_first(tmp_path):
    plan = FaultPlan(transient=1.0, seed=5)  # every session faulty; window: the default, 8
    struck = Counter()
    for n in range(800):
        store = FaultyStore(LocalStore(tmp_path), plan, session=f"2025-01/op[{n}]/0")
        for call in range(1, 20):
            try:
                store.exists(str(call))
            except TransientStorageError:
                struck[call] += 1
                break
    assert sorted(struck) == list(range(1, 9)) and sum(struck.values()) == 800
    assert all(70 < n < 130 for n in struck.values()), struck  # uniform: ~100 each
    short = [FaultyStore(LocalStore(tmp_path), plan, session=f"s{n}") for n in range(200)]
    escaped = sum(outcomes(store) == ["ok"] * 3 for store in short)
    assert 105 < escaped < 145  # k > 3 for 5 in 8 (~125): a 3-call session escapes those


def test_a_fault_after_writes_is_journaled_and_the_retry_finds_what_it_created(tmp_path):
    journal = tmp_path / "faults.jsonl"
    plan = FaultPlan(transient=1.0, seed=1, journal=str(journal))
    session = next(
        f"m/extract[{n}]/0" for n in range(100) if _fault_at(plan, f"m/extract[{n}]/0") >= 4
    )
    store, created = FaultyStore(LocalStore(tmp_path / "s"), plan, session, "run"), []
    with pytest.raises(TransientStorageError, match=r"put_if_absent img/\d \(call \d of the step"):
        for n in range(10):
            assert store.put_if_absent(f"img/{n}", b"x")
            created.append(f"img/{n}")
    retry = FaultyStore(LocalStore(tmp_path / "s"), FaultPlan(journal=str(journal)), "m/e/1", "run")
    assert not any(retry.put_if_absent(key, b"x") for key in created)  # found, not created

    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    (draw,) = [line for line in lines if line["event"] == "draw"]
    (fault,) = [line for line in lines if line["event"] == "fault"]
    assert (draw["session"], draw["scope"], fault["call"]) == (session, "run", draw["fault_at"])
    assert fault["created"] == created and len(created) == draw["fault_at"] - 1
    found = [
        line for line in lines if line["event"] == "put_if_absent" and line["session"] == "m/e/1"
    ]
    assert [(line["key"], line["created"]) for line in found] == [(k, False) for k in created]


def _fault_at(plan: FaultPlan, session: str) -> int:
    # the draw never touches the inner store (and LocalStore(".") would make the checkout 0700)
    return FaultyStore(None, plan, session, "draw-only")._draw("")


def test_the_wrapper_keeps_the_stores_own_attributes(tmp_path):
    inner = LocalStore(tmp_path)
    store = with_faults(inner, "latency_ms=1")
    assert store.root == inner.root and not hasattr(store, "io_workers")
    store.put_bytes("x/y", b"z")
    assert store.size("x/y") == 1 and store.list_prefixes("x") == []


def test_counted_faults_fail_the_chosen_calls_in_every_store_that_shares_the_counter(tmp_path):
    spec = f"method=delete,after=1,failures=2,kind=permanent,counter={tmp_path / 'n'}"
    stores = [with_faults(LocalStore(tmp_path / "s"), spec) for _ in range(2)]  # two "retries"
    results = []
    for store in [*stores, *stores]:
        try:
            store.delete("k")
            results.append("ok")
        except PermanentStorageError:
            results.append("failed")
    assert results == ["ok", "failed", "failed", "ok"]
    with pytest.raises(ValueError, match="method= needs counter="):
        parse_faults("method=delete,failures=1")


def test_a_held_call_waits_before_it_starts_then_goes_on_once(tmp_path):
    signal = tmp_path / "held.json"
    store = with_faults(
        LocalStore(tmp_path / "s"), f"pause=archive/*/manifest.json,signal={signal}"
    )
    store.put_bytes("archive/r/plan.json", b"{}")  # not matching: never held
    assert store.get_bytes("archive/r/plan.json", 10) == b"{}" and not signal.exists()
    writer = threading.Thread(target=store.put_bytes, args=("archive/r/manifest.json", b"m"))
    writer.start()
    deadline = time.monotonic() + 10
    while not signal.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    held = json.loads(signal.read_text())
    assert (held["pid"], held["method"], held["key"]) == (
        os.getpid(), "put_bytes", "archive/r/manifest.json"
    )  # fmt: skip
    time.sleep(0.1)
    assert writer.is_alive() and not store.exists("archive/r/manifest.json")  # not started
    (tmp_path / "held.json.go").touch()
    writer.join(10)
    assert store.get_bytes("archive/r/manifest.json", 10) == b"m"
    store.put_bytes("archive/r/manifest.json", b"n")  # once per process: the next goes through
    with pytest.raises(TransientStorageError, match="held call never let go"):
        other = tmp_path / "other.json"
        spec = f"pause=a/*,signal={other},hold_s=0.05"
        with_faults(LocalStore(tmp_path / "s"), spec).put_if_absent("a/b", b"x")
    reads = f"pause=a/*,pause_method=get_bytes,signal={tmp_path / 'read.json'},hold_s=0.05"
    store = with_faults(LocalStore(tmp_path / "s"), reads)
    store.put_bytes("a/c", b"y")  # with pause_method, writes are not held
    with pytest.raises(TransientStorageError, match="held call never let go: get_bytes a/c"):
        store.get_bytes("a/c", 10)


def test_faults_are_off_unless_the_test_location_sets_the_variable(monkeypatch, tmp_path):
    from report_pipeline.definitions import build_defs

    defs = build_defs("local")
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    assert faults_from_environment(defs) is defs and with_store_faults(defs, "") is defs
    monkeypatch.setenv(FAULTS_ENV, "transient=0.5")
    resource = faults_from_environment(defs).resources["store"]
    assert isinstance(resource, FaultyStoreResource) and resource.faults == "transient=0.5"
    monkeypatch.setenv(FAULTS_ENV, "transient=half")
    with pytest.raises(ValueError, match="transient='half' is not a number"):
        faults_from_environment(defs)  # a typo stops the code location from loading


def test_both_deployments_get_the_layer_in_front_of_their_own_store(monkeypatch, tmp_path, s3):
    from report_pipeline.definitions import build_defs

    monkeypatch.setenv("REPORT_PIPELINE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("REPORT_PIPELINE_S3_BUCKET", s3.bucket)
    monkeypatch.setenv("REPORT_PIPELINE_S3_ENDPOINT", s3.endpoint)
    for name, inner in (("local", LocalStore), ("production", S3Store)):
        defs = with_store_faults(build_defs(name), "permanent=doomed/*")
        with dg.build_resources({"store": defs.resources["store"]}) as built:
            store = built.store.get_store()
        assert isinstance(store, FaultyStore) and isinstance(store.inner, inner), name
        store.put_bytes("fine/1", b"x")
        with pytest.raises(PermanentStorageError):
            store.put_bytes("doomed/1", b"x")

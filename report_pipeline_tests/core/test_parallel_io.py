"""Concurrent store calls (`parallel_io`): side by side only for a store that says it benefits,
results and failures in the items' order, background uploads all done (or failed) on exit."""

from __future__ import annotations

import threading

import pytest

from report_pipeline.core.storage import parallel_io
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.parallel_io import BackgroundPuts, io_workers, map_io
from report_pipeline.core.storage.s3_store import IO_WORKERS, S3Store
from report_pipeline.core.storage.store import TransientStorageError
from report_pipeline.defs.deployment.s3_clients import S3ClientResource


class Recorder:
    def __init__(self, workers: int, fail: str = "") -> None:
        self.io_workers, self.fail, self.put = workers, fail, {}
        self.threads: set[str] = set()

    def put_if_absent(self, key: str, data: bytes, md5: str = "") -> bool:
        self.threads.add(threading.current_thread().name)
        if key == self.fail:
            raise TransientStorageError(f"injected timeout {key}")
        return self.put.setdefault(key, data) is data


def test_local_store_calls_stay_in_the_caller_in_order(tmp_path):
    store = LocalStore(tmp_path)
    assert io_workers(store) == 1
    seen = []
    assert map_io(store, lambda n: seen.append(threading.current_thread().name) or n * 2,
                  range(5)) == [0, 2, 4, 6, 8]  # fmt: skip
    assert set(seen) == {threading.current_thread().name}
    with BackgroundPuts(store) as uploads:
        uploads.put_if_absent("archive/a.png", b"a")
        assert store.get_bytes("archive/a.png", 10) == b"a"  # written before the call returned
        uploads.put_if_absent("archive/a.png", b"other")
    assert uploads.created == 1 and store.get_bytes("archive/a.png", 10) == b"a"


def test_calls_overlap_when_the_store_benefits():
    barrier = threading.Barrier(4, timeout=5)  # passes only if four calls run at once
    assert map_io(Recorder(4), lambda n: barrier.wait() * 0 + n, range(8)) == list(range(8))


def test_the_first_failure_in_order_is_raised():
    def call(n: int) -> int:
        if n in {3, 5}:
            raise TransientStorageError(f"call {n}")
        return n

    with pytest.raises(TransientStorageError, match="call 3"):
        map_io(Recorder(4), call, range(8))


def test_background_puts_are_all_done_on_exit_or_the_failure_is_raised():
    store = Recorder(4)
    store.put["archive/3.png"] = b"x"  # already there: not created again
    with BackgroundPuts(store) as uploads:
        for n in range(20):
            uploads.put_if_absent(f"archive/{n}.png", bytes([n]))
    assert len(store.put) == 20 and store.threads != {threading.current_thread().name}
    assert uploads.created == 19
    failing = Recorder(4, fail="archive/7.png")
    with (
        pytest.raises(TransientStorageError, match="archive/7.png"),
        BackgroundPuts(failing) as up,
    ):
        for n in range(20):
            up.put_if_absent(f"archive/{n}.png", b"x")


def test_s3_store_uses_its_client_pool(s3):
    assert S3Store(s3.client, s3.bucket).io_workers == 10  # botocore's default pool
    production = S3ClientResource(endpoint_url=s3.endpoint).get_client()
    assert S3Store(production, s3.bucket).io_workers == IO_WORKERS == 16


def test_background_puts_hold_a_bounded_number_of_bytes(monkeypatch):
    """Payloads waiting for upload stay within WAITING_BYTES; one larger goes alone."""
    monkeypatch.setattr(parallel_io, "WAITING_BYTES", 100)
    lock, held, seen = threading.Lock(), [], []

    class Slow(Recorder):
        def put_if_absent(self, key: str, data: bytes, md5: str = "") -> bool:
            with lock:
                held.append(len(data))
                seen.append(list(held))
            threading.Event().wait(0.02)  # long enough for the caller to try to add more
            with lock:
                held.remove(len(data))
            return super().put_if_absent(key, data, md5)

    store = Slow(8)
    with BackgroundPuts(store) as uploads:
        for n in range(6):
            uploads.put_if_absent(f"archive/{n}.png", bytes(40))
        uploads.put_if_absent("archive/big.png", bytes(500))
    assert len(store.put) == 7 and uploads.created == 7
    assert max(sum(now) for now in seen if 500 not in now) <= 100  # two of 40 at a time
    assert [now for now in seen if 500 in now] == [[500]]  # the large one alone


def test_meanwhile_runs_after_the_block_on_a_store_that_does_not_benefit(tmp_path):
    order: list[str] = []
    with parallel_io.meanwhile(LocalStore(tmp_path), lambda: order.append("call")):
        order.append("block")
    assert order == ["block", "call"]


def test_meanwhile_runs_beside_the_block_and_raises_its_failure_at_the_end():
    started, order = threading.Event(), []

    def call() -> None:
        started.set()
        order.append(threading.current_thread().name)

    with parallel_io.meanwhile(Recorder(4), call):
        assert started.wait(5)  # begun before the block ends
    assert order and order[0] != threading.current_thread().name

    def failing() -> None:
        raise TransientStorageError("injected")

    with (
        pytest.raises(TransientStorageError, match="injected"),
        parallel_io.meanwhile(Recorder(4), failing),
    ):
        pass


def test_meanwhile_lets_the_blocks_failure_win_once_the_call_has_ended():
    ended = threading.Event()

    def slow() -> None:
        ended.wait(0.2)
        ended.set()

    with pytest.raises(ValueError, match="block"), parallel_io.meanwhile(Recorder(4), slow):
        raise ValueError("block")
    assert ended.is_set()  # nothing left running behind the caller


def test_background_puts_upload_nothing_before_their_first_call_and_fail_with_it(tmp_path):
    """`first` (extraction's work marker) runs beside the caller, and every upload waits for
    it; its failure fails the uploads (and the block). On a store that does not benefit it is
    called in place, before anything else."""
    store, release, order = Recorder(4), threading.Event(), []

    def marker() -> None:
        assert release.wait(5)
        order.append("marker")

    with BackgroundPuts(store, first=marker) as uploads:
        for n in range(6):
            uploads.put_if_absent(f"archive/{n}.png", b"x")  # the caller is not held up
        assert not store.put  # nothing uploaded while the marker is on its way
        release.set()
        uploads.first_done()
        order.append("after")
    assert order == ["marker", "after"] and len(store.put) == 6

    def failing() -> None:
        raise TransientStorageError("injected marker failure")

    store = Recorder(4)
    with (
        pytest.raises(TransientStorageError, match="injected marker failure"),
        BackgroundPuts(store, first=failing) as uploads,
    ):
        uploads.put_if_absent("archive/a.png", b"x")
    assert not store.put
    with (
        pytest.raises(TransientStorageError, match="injected marker failure"),
        BackgroundPuts(Recorder(4), first=failing),
    ):
        pass  # no upload at all: the block still fails with it
    local, seen = LocalStore(tmp_path), []
    with BackgroundPuts(local, first=lambda: seen.append("first")) as uploads:
        assert seen == ["first"]
        uploads.put_if_absent("archive/a.png", b"x")

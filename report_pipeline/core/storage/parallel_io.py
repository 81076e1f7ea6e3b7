"""Store calls side by side, for stores that spend their time waiting on the network.

A store that benefits says so with an `io_workers` attribute above 1 (S3Store: one worker per
pooled connection of its boto3 client, which is thread-safe). Any other store (LocalStore,
test doubles) has none: its calls run one after another, in the same order, exactly as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def io_workers(store: Any) -> int:
    return max(1, int(getattr(store, "io_workers", 1)))


def map_io(store: Any, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """`[fn(item) for item in items]`, concurrently when the store benefits. Results keep the
    items' order; the first failure (in that order) is raised once the running calls end, and
    calls not yet started are dropped (every store call is idempotent, so a retry redoes them)."""
    items = list(items)
    workers = min(io_workers(store), len(items))
    if workers <= 1:
        return [fn(item) for item in items]
    pool = ThreadPoolExecutor(workers, thread_name_prefix="store-io")
    try:
        return list(pool.map(fn, items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def together(store: Any, *calls: Callable[[], Any]) -> list[Any]:
    """The results of `calls` (no arguments each), side by side when the store benefits: reads
    that do not depend on each other cost one round trip's wait, not one each."""
    return map_io(store, lambda call: call(), calls)


@contextmanager
def meanwhile(store: Any, call: Callable[[], Any]) -> Iterator[None]:
    """Run `call` beside the `with` block when the store benefits (S3: its round trips cost the
    block's wall time nothing), else after the block, in place, as plain code would. Leaving
    the block waits for `call` and raises its failure; the block's own failure wins, once
    `call` has ended (nothing it writes is left running behind the caller)."""
    if io_workers(store) <= 1:
        yield
        call()
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="store-io")
    future = pool.submit(call)
    try:
        yield
    finally:
        pool.shutdown(wait=True)
    future.result()


WAITING_BYTES = 128 * 1024 * 1024  # payloads held for upload at once (one larger goes alone)


class BackgroundPuts:
    """`put_if_absent` that may run behind the caller's loop (extraction uploads while it
    decodes); `created` counts the objects the calls created (absent before).

    `first`: a call made before any upload (the work marker), in the pool, beside the caller's
    loop; every upload waits for it, and fails with it (`first_done` waits for it too).
    Leaving the `with` block waits for every upload and raises the first failure; a failure
    seen earlier is raised at the next call. At most two uploads per worker are waiting, and
    at most `WAITING_BYTES` of payloads (a larger one waits until it is alone), so payloads do
    not pile up in memory. On a store without `io_workers`, the store's own `put_if_absent` is
    called in place.
    """

    def __init__(self, store: Any, first: Callable[[], object] | None = None) -> None:
        self.store, workers = store, io_workers(store)
        self._pool = ThreadPoolExecutor(workers, "store-put") if workers > 1 else None
        self._first: Future | None = None
        if first is not None and self._pool is None:
            first()  # in place, before anything else, as plain code would
        elif first is not None:
            self._first = self._pool.submit(first)
        self._most, self._waiting, self._bytes = 2 * workers, 0, 0
        self._room = threading.Condition()
        self._pending: list[Future] = []
        self._failed: BaseException | None = None
        self.created = 0

    def put_if_absent(self, key: str, data: bytes, md5: str = "") -> None:
        if self._pool is None:
            self.created += bool(self.store.put_if_absent(key, data, md5))
            return
        if self._failed is not None:
            raise self._failed
        with self._room:
            self._room.wait_for(
                lambda: (
                    not self._waiting
                    or (self._waiting < self._most and self._bytes + len(data) <= WAITING_BYTES)
                )
            )
            self._waiting, self._bytes = self._waiting + 1, self._bytes + len(data)
        future = self._pool.submit(self._put, key, data, md5)
        future.add_done_callback(partial(self._done, size=len(data)))
        self._pending.append(future)

    def _put(self, key: str, data: bytes, md5: str) -> bool:
        self.first_done()
        return self.store.put_if_absent(key, data, md5)

    def first_done(self) -> None:
        """Wait for `first`, and raise its failure."""
        if self._first is not None:
            self._first.result()

    def _done(self, future: Future, size: int) -> None:
        with self._room:
            self._waiting, self._bytes = self._waiting - 1, self._bytes - size
            self._room.notify_all()
        if not future.cancelled() and future.exception() is not None and self._failed is None:
            self._failed = future.exception()

    def __enter__(self) -> BackgroundPuts:
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        if self._pool is None:
            return
        try:
            if exc_type is None:
                self.first_done()
                self.created += sum(bool(future.result()) for future in self._pending)
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)

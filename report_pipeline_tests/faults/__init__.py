"""Fault injection at the storage boundary. This folder's tests cover the fault layer
(devstack/faults.py) over whole backfills; the helpers here are what other tests use: a real
LocalStore whose chosen calls fail (the fault layer's counted faults, as a resource), and a store
that crashes at a chosen call.
"""

from __future__ import annotations

from devstack.faults import FaultPlan, FaultyStore
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.defs.deployment.resources import StoreResource


class FaultyStoreResource(StoreResource):
    """A LocalStore at `root` whose calls of `method` numbered `after`.. `after + failures - 1`
    fail (counted in `counter_file`, so Dagster re-creating the resource for each step and each
    retry keeps the count); `watch_dir`: its workdirs at the first failure go to
    `<counter_file>.seen`."""

    method: str
    method_key: str = ""  # only calls whose first key matches this pattern count
    failures: int
    transient: bool = True
    after: int = 0  # calls that succeed before the failures start
    counter_file: str
    watch_dir: str = ""

    def get_store(self) -> FaultyStore:
        plan = FaultPlan(
            method=self.method, method_key=self.method_key, failures=self.failures,
            after=self.after,
            kind="transient" if self.transient else "permanent", counter=self.counter_file,
            watch=self.watch_dir,
        )  # fmt: skip
        return FaultyStore(LocalStore(self.root), plan)


class Crash(BaseException):
    """The process died here: a BaseException, so no `except Exception` on the way handles it."""


class CrashingStore:
    """Any store (LocalStore or S3Store), until the first call for which `when(method, key)` is
    true: that call crashes, before its write or, with `after`, once the write is done."""

    def __init__(self, inner, when, after: bool = False) -> None:
        self.inner, self._when, self._after, self.crashed = inner, when, after, False

    def __getattr__(self, name: str):
        method = getattr(self.inner, name)
        if name.startswith("_") or not callable(method):
            return method

        def call(*args, **kwargs):
            hit = not self.crashed and self._when(name, args[0] if args else "")
            if hit and not self._after:
                self.crashed = True
                raise Crash(f"crashed before {name}")
            result = method(*args, **kwargs)
            if hit:
                self.crashed = True
                raise Crash(f"crashed after {name}")
            return result

        return call

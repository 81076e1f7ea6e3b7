"""Fault injection at the storage boundary. This folder's tests cover the deployment's fault
layer (report_pipeline/core/storage/faults.py) over whole backfills; the helpers here are the
older, narrower ones other tests use: a real LocalStore whose chosen calls fail, and a store that
crashes at a chosen call.

The call counter lives in a file, so it survives Dagster re-creating the resource for each step
and each retry attempt. With `watch_dir`, the store records what that folder held at the moment
of the first injected failure (to show a worker's private directory existed, then was removed).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

from report_pipeline.core.scratch.workdir import LEASE_FILE
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError
from report_pipeline.defs.deployment.resources import StoreResource


def snapshot(folder: Path) -> list[dict]:
    """Every private workdir (inside its hour bucket) under `folder`."""
    return [
        {"name": d.name, "mode": stat.S_IMODE(d.stat().st_mode),
         "lease": json.loads((d / LEASE_FILE).read_text()) if (d / LEASE_FILE).exists() else None}
        for d in sorted(folder.rglob("w-*"))
    ]  # fmt: skip


class FaultyStore(LocalStore):
    def __init__(self, root: str, method: str, failures: int, transient: bool, after: int,
                 counter: Path, watch_dir: Path | None) -> None:  # fmt: skip
        super().__init__(root)
        self._method, self._failures, self._transient = method, failures, transient
        self._after, self._counter, self._watch = after, counter, watch_dir
        original = getattr(super(), method)
        setattr(self, method, lambda *a, **k: self._maybe_fail() or original(*a, **k))

    def _maybe_fail(self) -> None:
        calls = int(self._counter.read_text()) if self._counter.exists() else 0
        self._counter.write_text(str(calls + 1))
        if not self._after <= calls < self._after + self._failures:
            return
        if calls == self._after and self._watch is not None:
            Path(f"{self._counter}.seen").write_text(json.dumps(snapshot(self._watch)))
        error = TransientStorageError if self._transient else PermanentStorageError
        raise error(f"injected {'timeout' if self._transient else 'failure'} in {self._method}")


class FaultyStoreResource(StoreResource):
    method: str
    failures: int
    transient: bool = True
    after: int = 0  # calls that succeed before the failures start
    counter_file: str
    watch_dir: str = ""

    def get_store(self) -> FaultyStore:
        watch = Path(self.watch_dir) if self.watch_dir else None
        return FaultyStore(
            self.root, self.method, self.failures, self.transient, self.after,
            Path(self.counter_file), watch,
        )  # fmt: skip


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

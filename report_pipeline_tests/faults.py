"""Fault injection at the storage boundary: a real LocalStore whose chosen calls fail.

The failure counter lives in a file, so it survives Dagster re-creating the resource for each
step and each retry attempt.
"""

from __future__ import annotations

from pathlib import Path

from report_pipeline.core.storage import (
    LocalStore,
    PermanentStorageError,
    TransientStorageError,
)
from report_pipeline.defs.resources import StoreResource


class FaultyStore(LocalStore):
    def __init__(self, root: str, method: str, failures: int, transient: bool, counter: Path):
        super().__init__(root)
        self._method, self._failures, self._transient, self._counter = (
            method, failures, transient, counter,
        )  # fmt: skip
        original = getattr(super(), method)
        setattr(self, method, lambda *a, **k: self._maybe_fail() or original(*a, **k))

    def _maybe_fail(self) -> None:
        done = int(self._counter.read_text()) if self._counter.exists() else 0
        if done < self._failures:
            self._counter.write_text(str(done + 1))
            error = TransientStorageError if self._transient else PermanentStorageError
            raise error(f"injected {'timeout' if self._transient else 'failure'} in {self._method}")

    def injected(self) -> int:
        return int(self._counter.read_text()) if self._counter.exists() else 0


class FaultyStoreResource(StoreResource):
    method: str
    failures: int
    transient: bool = True
    counter_file: str

    def get_store(self) -> FaultyStore:
        return FaultyStore(
            self.root, self.method, self.failures, self.transient, Path(self.counter_file)
        )

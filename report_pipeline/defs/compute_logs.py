"""Dagster's local compute logs without the terminal mirror (named in dagster_home/dagster.yaml).

`LocalComputeLogManager` writes a run's stdout/stderr to files the UI shows, and mirrors them to
the run process's own terminal through a `tail -F` process plus a Python watcher, per stream, per
run. Starting and stopping those four processes is ~0.05 s of a run's fixed cost on this machine
(bench/README.md). This manager keeps the files, their location (`$DAGSTER_HOME/storage`, as the
default) and the UI's view; it only drops the echo to the terminal. Nothing of the pipeline
writes to stdout; MuPDF's C-level warnings and crash output still land in the captured files.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import dagster as dg
from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.local_compute_log_manager import (
    IO_TYPE_EXTENSION,
    LocalComputeLogManager,
)
from dagster._utils import ensure_file, touch_file


class FileComputeLogManager(LocalComputeLogManager):
    """Captured stdout/stderr in files under `base_dir` (default: the instance's `storage/`)."""

    def __init__(self, base_dir: str | None = None, polling_timeout: float | None = None,
                 inst_data=None):  # fmt: skip
        super().__init__(base_dir or "", polling_timeout, inst_data)

    @classmethod
    def config_type(cls) -> dict:
        return {
            "base_dir": dg.Field(dg.StringSource, is_required=False),
            "polling_timeout": dg.Field(dg.Float, is_required=False),
        }

    @classmethod
    def from_config_value(cls, inst_data, config_value) -> FileComputeLogManager:
        return cls(inst_data=inst_data, **config_value)

    def register_instance(self, instance: dg.DagsterInstance) -> None:
        super().register_instance(instance)
        if not self._base_dir:  # where Dagster's default manager puts them
            self._base_dir = os.path.join(instance.root_directory, "storage")

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Iterator[CapturedLogContext]:
        out = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        err = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        ensure_file(out)
        ensure_file(err)
        with redirect_to_file(sys.stdout, out), redirect_to_file(sys.stderr, err):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # as the parent: capture is complete

"""The reader of /proc/<pid>/stat (Linux) outside core/: whether a run's worker is still the
process that started it (defs/reports/dead_runs.py), and the benchmarks' CPU figures. core/,
which imports nothing outside it, reads a running child's CPU itself (sandbox/child.cpu_of)."""

from __future__ import annotations

from pathlib import Path


def proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name, state first (so field N of
    proc(5) is at N - 3). OSError once the process is gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

"""What every benchmark shares (Dagster-free): the repository root, the error that voids a
result, the machine facts and the JSON record under bench/results/."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from report_pipeline.core.sandbox.child import proc_stat

ROOT = Path(__file__).resolve().parent.parent


class BenchError(RuntimeError):
    """A run failed or a result disagrees with what it must be: the benchmark's numbers are void."""


def machine(**extra: Any) -> dict[str, Any]:
    """Facts that make a result comparable: date, cores, Python, platform, plus `extra`."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        **extra,
        "platform": platform.platform(),
    }


def write_json(out_dir: Path, record: dict[str, Any], prefix: str = "") -> Path:
    """bench/results/<prefix><UTC time>.json (git-ignored)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{prefix}{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    return path


TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_cpu(pid: int) -> float:
    """utime + stime of one process from /proc (Linux), in seconds; 0 once it is gone."""
    try:
        fields = proc_stat(pid)
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def group_cpu(pgid: int, roles: dict[str, str]) -> dict[str, float]:
    """CPU seconds of a process group's live processes, each with its waited-for children
    (utime + stime + cutime + cstime from /proc, Linux), summed by role: the first `roles`
    entry whose text is in the command line, else "other". A child its parent has reaped (a
    run worker, a decoder) counts in the parent's cutime/cstime: "<role>: reaped"."""
    totals: dict[str, float] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = proc_stat(entry.name)
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            role = next((name for text, name in roles.items() if text in line), "other")
            for name, values in ((role, fields[11:13]), (f"{role}: reaped", fields[13:15])):
                totals[name] = totals.get(name, 0.0) + sum(map(int, values)) / TICKS
    return {name: seconds for name, seconds in totals.items() if seconds}


def s3_server_pids(endpoint: str) -> list[int]:
    """The process of `local_s3.moto_server()` serving `endpoint` (started by any process)."""
    from devstack import local_s3

    return pids_with(" ".join(local_s3.command(int(endpoint.rsplit(":", 1)[1]))[1:]))


def pids_with(text: str) -> list[int]:
    """Processes whose command line contains `text` (Linux /proc; none elsewhere)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in line:
            found.append(int(entry.name))
    return found


def own_cpu() -> float:
    """CPU seconds of this process and its waited-for children (decoders), so far."""
    import resource

    me, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


# What a benchmark's own S3 settings must not inherit from the shell: a profile, a session token,
# or the product's endpoint, prefix and inbox variables (each benchmark sets its own).
FOREIGN_S3_SETTINGS = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "REPORT_PIPELINE_S3_ENDPOINT",
                       "REPORT_PIPELINE_S3_PREFIX", "REPORT_PIPELINE_INBOX")  # fmt: skip


def clear_foreign_s3_settings() -> None:
    for name in FOREIGN_S3_SETTINGS:
        os.environ.pop(name, None)

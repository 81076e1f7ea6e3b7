"""What every benchmark shares (Dagster-free): the repository root, the error that voids a
result, the machine facts and the JSON record under bench/results/."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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

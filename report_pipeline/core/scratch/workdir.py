"""Private per-step working directories: 0700, random names, a lease file, removed in `finally`.

A directory lives under a bucket named for the hour from which it may be deleted (the later of
its lease and its deadline), so a janitor only opens buckets that are due: its cost follows what
expired, not everything on disk.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from report_pipeline.core.model.clock import iso, parse_iso, utc_now
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.storage.store import WORK_ROOT, full_disk_named

LEASE_FILE = "lease.json"
BUCKET_FORMAT = "%Y%m%d%H"


@dataclass(frozen=True)
class Lease:
    owner: str  # "<run id>/<step>": which worker holds the directory
    lease_until: str  # ISO 8601 UTC: the worker may still be using it before this
    delete_by: str  # ISO 8601 UTC: the short clock for working material

    def due(self, now: datetime) -> bool:
        return now >= parse_iso(self.lease_until) and now >= parse_iso(self.delete_by)

    def removable_from(self) -> datetime:
        return max(parse_iso(self.lease_until), parse_iso(self.delete_by))


def private_root(root: Path | str) -> Path:
    path = Path(root)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def private_file(directory: Path, suffix: str = "") -> Path:
    """A new empty 0600 file with a random name inside `directory`."""
    path = directory / f"{secrets.token_hex(12)}{suffix}"
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return path


def bucket_for(lease: Lease) -> str:
    return lease.removable_from().strftime(BUCKET_FORMAT)


def removable_minute(lease: Lease) -> int:
    """Minutes since the epoch from which the directory may go (also in its name, so a janitor
    can pass over a live directory without opening its lease)."""
    return int(lease.removable_from().timestamp() // 60) + 1


def named_minute(directory: Path) -> int | None:
    parts = directory.name.split("-")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def read_lease(directory: Path) -> Lease | None:
    try:
        return Lease(**json.loads((directory / LEASE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None  # no lease yet (just created) or unreadable: never "due"


def create_workdir(root: Path | str, lease: Lease) -> Path:
    """A fresh private directory in its hour bucket, with its lease file; the caller removes it."""
    bucket = private_root(root) / bucket_for(lease)
    bucket.mkdir(mode=0o700, exist_ok=True)
    directory = bucket / f"w-{removable_minute(lease)}-{secrets.token_hex(12)}"
    directory.mkdir(mode=0o700)
    try:
        staged = private_file(directory, ".lease")
        staged.write_text(json.dumps(lease.__dict__))
        staged.rename(directory / LEASE_FILE)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return directory


@contextmanager
def private_workdir(root: Path | str, lease: Lease) -> Iterator[Path]:
    """A fresh private directory that is removed however the block ends.

    A crash that skips `finally` leaves it for the janitor, which removes it once both the
    lease and the deadline have elapsed. The work root filling up, as the directory is made or
    while the block writes into it (a report streamed in, the staged source fetched), is
    `DiskFull` naming `settings.work_root`: a failure of its own, not a refusal of the report.
    """
    with full_disk_named(WORK_ROOT, "a step's private workdir"):
        directory = create_workdir(root, lease)
    try:
        with full_disk_named(WORK_ROOT, "a step's private workdir"):
            yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def new_lease(owner: str, now: datetime, lease_minutes: int, work_minutes: int) -> Lease:
    return Lease(
        owner,
        iso(now + timedelta(minutes=lease_minutes)),
        iso(now + timedelta(minutes=work_minutes)),
    )


def lease_for(settings: PipelineSettings, owner: str) -> Lease:
    policy = settings.retention
    return new_lease(owner, utc_now(), policy.lease_minutes, policy.work_minutes)

"""Private per-step working directories: 0700, random names, a lease file, removed in `finally`.

A directory lives under a bucket named for the hour from which it may be deleted (the later of
its lease and its deadline), so a janitor only opens buckets that are due: its cost follows what
expired, not everything on disk.

A lease also names the process that holds it (`holder`: boot, pid namespace, pid and start
tick). Wall-clock times alone cannot tell a live step from a dead one when a host's clock steps
forward, or when a step outlives its lease; a janitor on the same host asks the kernel instead,
and never deletes a directory whose holder still runs (`held_by_live_process`).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
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
    holder: str = ""  # this_process() of the worker; "" where /proc cannot say (clock only)

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
    """A lease for a directory this process uses from now on: the settings' clocks and this
    process as its holder."""
    policy = settings.retention
    lease = new_lease(owner, utc_now(), policy.lease_minutes, policy.work_minutes)
    return replace(lease, holder=this_process())


def this_process() -> str:
    """Who holds a lease: `<boot id>/<pid namespace>/<pid>/<start tick>`, or "" without /proc.
    The start tick (clock ticks after boot) tells this process from a later one given its pid."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
        return f"{boot}/{namespace}/{os.getpid()}/{_start_tick(os.getpid())}"
    except (OSError, ValueError, IndexError):
        return ""


def held_by_live_process(lease: Lease) -> bool:
    """Whether the lease's holder still runs, as this host's kernel sees it. False when it has
    ended (or is a zombie), when the lease names none, or when it was taken on another host, boot
    or pid namespace: then only the lease's times decide."""
    parts = lease.holder.split("/")
    if len(parts) != 4 or not this_process():
        return False
    boot, namespace, pid, tick = parts
    here = this_process().split("/")
    if [boot, namespace] != here[:2] or not pid.isdigit():
        return False
    try:
        alive = _state(int(pid)) not in ("Z", "X")
        return alive and str(_start_tick(int(pid))) == tick
    except (OSError, ValueError, IndexError):
        return False  # gone


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (which may hold spaces): field 3 onwards."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _state(pid: int) -> str:
    return _stat_fields(pid)[0]


def _start_tick(pid: int) -> int:
    return int(_stat_fields(pid)[19])  # field 22, starttime

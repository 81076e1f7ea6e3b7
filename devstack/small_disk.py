"""A small filesystem of its own for a test: a tmpfs of a few MiB mounted on a folder, which the
test fills to its last byte and empties again, so whatever writes there meets a real ENOSPC from
the kernel (issue 33, case 2: report_pipeline_tests/faults/test_fault_disk_full.py). Mounting
needs root (CAP_SYS_ADMIN), as every machine of this project and its CI runs; without it the
mount fails with what it needs, never a skip. Not Dagster, not core: plain Python.

Put a root in a folder *inside* the mount, never on the mount itself: the ballast that fills the
disk is a file beside it, not an object in it.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SmallDisk:
    mount: Path

    @property
    def ballast(self) -> Path:
        return self.mount / "ballast"

    def free_bytes(self) -> int:
        info = os.statvfs(self.mount)
        return info.f_bavail * info.f_frsize

    def fill(self) -> int:
        """Write the ballast until the disk refuses one more byte: the bytes it took."""
        written = 0
        fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (1 << 20, 1 << 16, 1 << 12, 1):
                chunk = b"\0" * size
                try:
                    while True:
                        written += os.write(fd, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
        finally:
            os.close(fd)
        return written

    def empty(self) -> None:
        """Space back: the ballast goes."""
        self.ballast.unlink(missing_ok=True)


@contextmanager
def small_disk(mount: Path, mib: int = 32) -> Iterator[SmallDisk]:
    """A tmpfs of `mib` MiB on `mount` (made if missing, private) while the block runs, then
    unmounted (lazily: a process still inside it does not keep it)."""
    mount.mkdir(parents=True, exist_ok=True)
    command = ["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0700", "tmpfs", str(mount)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(
            f"cannot mount a {mib} MiB tmpfs ({done.stderr.strip() or done.returncode}): a full "
            "disk is tested on a filesystem of its own, which needs root (CAP_SYS_ADMIN)"
        )
    try:
        yield SmallDisk(mount)
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], capture_output=True, check=False)

"""Private per-step working directories: 0700, random names, a lease file, removed in `finally`."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LEASE_FILE = "lease.json"


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


@contextmanager
def private_workdir(root: Path | str, owner: str, lease_until: str) -> Iterator[Path]:
    """A fresh private directory that is removed however the block ends.

    The lease file tells a janitor which run/step owns the directory and until when; a crash
    that skips `finally` leaves it for the janitor once the lease has elapsed.
    """
    directory = private_root(root) / f"w-{secrets.token_hex(12)}"
    directory.mkdir(mode=0o700)
    lease = private_file(directory, ".lease")
    lease.write_text(json.dumps({"owner": owner, "lease_until": lease_until}))
    lease.rename(directory / LEASE_FILE)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)

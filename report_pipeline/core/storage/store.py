"""The Store protocol: one private key space for staged sources, work material and the archive.

Keys are slash-separated relative paths made only by this package (never from user input).
The local implementation (local_store.py) keeps directories 0700 and files 0600 and writes
atomically, so a reader never sees half an object and a retried write is harmless.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

_KEY = re.compile(r"^[A-Za-z0-9_.=-]+(/[A-Za-z0-9_.=-]+)*$")
CHUNK = 1 << 20


class StorageError(Exception):
    """A storage operation failed. `transient` says whether trying again may succeed."""

    transient = False


class OverCap(Exception):
    """More bytes arrived than the cap allows."""


def copy_capped(src: BinaryIO, out: BinaryIO, max_bytes: int, digest=None) -> int:
    """Copy in 1 MiB pieces, counting: past `max_bytes` raise OverCap, whatever length was
    declared. Returns the bytes copied; feeds `digest` (a hashlib object) when given."""
    size = 0
    while chunk := src.read(CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise OverCap(max_bytes)
        if digest is not None:
            digest.update(chunk)
        out.write(chunk)
    return size


class TransientStorageError(StorageError):
    """Timeouts, throttling, connection resets: worth a bounded retry."""

    transient = True


class PermanentStorageError(StorageError):
    """Missing objects, permissions, full disks: retrying will not help."""


# The roots a disk can fill, by the setting that names them (README, "Configure"): what a full
# disk's message says, never the root's path.
STORE_ROOT, WORK_ROOT = "store.root", "settings.work_root"
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})  # a full filesystem, or the user's quota


class DiskFull(PermanentStorageError):
    """A root's filesystem has no space left (ENOSPC, or EDQUOT: over quota) while something was
    written there. Not transient in a retry's sense (a step retried seconds later meets the same
    full disk), not bad input (the report is fine): a failure of its own, which names the root
    by its setting (`root`), never by its path, and what was being written."""

    def __init__(self, root: str, writing: str) -> None:
        self.root = root
        super().__init__(
            f"{root} is full (no space left on device) while writing {writing}; free space "
            "there, then re-execute from failure"
        )


def no_space(exc: BaseException) -> bool:
    """Whether `exc` is a filesystem saying it is full."""
    return isinstance(exc, OSError) and exc.errno in NO_SPACE


@contextmanager
def full_disk_named(root: str, writing: str) -> Iterator[None]:
    """Inside the block, a full filesystem (`no_space`) is `DiskFull(root, writing)`."""
    try:
        yield
    except OSError as exc:
        if no_space(exc):
            raise DiskFull(root, writing) from None
        raise


class MissingObject(PermanentStorageError):
    """No object has that key (a read, `size` or `fetch` of it), on any store: a caller that
    expects absence reads once and catches this instead of asking `exists` first."""


def read_capped(key: str, source: BinaryIO, out: BinaryIO, max_bytes: int) -> None:
    """`copy_capped` from a store object, past the cap the store's permanent error."""
    try:
        copy_capped(source, out, max_bytes)
    except OverCap:
        raise PermanentStorageError(f"object {key} is larger than {max_bytes} bytes") from None


def fetch_into(key: str, source: BinaryIO, dest: Path, max_bytes: int) -> None:
    """Stream `source` into a new private (0600) file, counting bytes: a stated size is never
    trusted. Closes `source`."""
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out, source:
        read_capped(key, source, out, max_bytes)


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    modified: float = 0.0  # seconds since the epoch
    # The hex MD5 of the stored bytes when the store's listing vouches for it, else "". S3: the
    # ETag of a single-part upload under SSE-S3 (or none), which S3 computes from the bytes it
    # stored (and, for `put_bytes`, checked against the Content-MD5 sent). LocalStore: always ""
    # (re-reading a local file is cheap; a caller who needs a digest reads the bytes).
    md5: str = ""


class Store(Protocol):
    def put_bytes(self, key: str, data: bytes) -> None: ...
    def put_file(self, key: str, path: Path) -> None: ...
    # `md5`: the hex MD5 of `data` when the caller already has it (S3 sends it as Content-MD5
    # instead of hashing the bytes again; "" lets the store hash them if it needs to)
    def put_if_absent(self, key: str, data: bytes, md5: str = "") -> bool: ...
    def get_bytes(self, key: str, max_bytes: int) -> bytes: ...
    # `src`'s bytes at `dst` too, inside the store (no bytes through this process; S3: one
    # CopyObject). Objects are immutable, so an existing `dst` is left as it is.
    def copy(self, src: str, dst: str) -> None: ...
    def fetch(self, key: str, dest: Path, max_bytes: int) -> None: ...
    def exists(self, key: str) -> bool: ...
    def size(self, key: str) -> int: ...
    def delete(self, key: str) -> bool: ...
    def delete_many(self, keys: Iterable[str]) -> None: ...
    def list(self, prefix: str) -> Iterator[ObjectInfo]: ...
    def list_prefixes(self, prefix: str) -> list[str]: ...
    # Writes a crashed writer left half-done, started before `before` (seconds since the
    # epoch), for the janitor: never objects, never in listings.
    def abandoned_writes(self, before: float) -> list[ObjectInfo]: ...
    def delete_abandoned(self, keys: Iterable[str]) -> None: ...


def check_key(key: str) -> str:
    """Refuse anything that is not a plain relative key (no '..', no absolute paths)."""
    if not _KEY.match(key) or any(part in {".", ".."} for part in key.split("/")):
        raise PermanentStorageError(f"invalid store key {key!r}")
    return key

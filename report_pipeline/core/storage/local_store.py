"""LocalStore: the Store protocol on a private local directory tree (the embedded default)."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from report_pipeline.core.storage.store import (
    CHUNK,
    STORE_ROOT,
    DiskFull,
    MissingObject,
    ObjectInfo,
    PermanentStorageError,
    check_key,
    fetch_into,
    no_space,
)

PARTIAL = ".partial"  # LocalStore's writes in flight, all in one folder (not a key)


class LocalStore:
    """The embedded default: a private directory tree (0700 dirs, 0600 files).

    Every write goes to a random name in `.partial/` (same filesystem) and is renamed or linked
    into place when complete. A writer killed mid-write leaves its file there, where listings
    never look and the janitor finds it without walking the tree (`abandoned_writes`). A write
    that fails (a full disk: `DiskFull`, naming `store.root`) removes its partial file: nothing
    is left under the final key, nor in `.partial/`.
    """

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).resolve()
        self._mkdir(self.root / PARTIAL)  # the root too: 0700 both
        os.chmod(self.root, 0o700)

    def _mkdir(self, path: Path) -> None:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)

    def _path(self, key: str) -> Path:
        if check_key(key).split("/", 1)[0] == PARTIAL:
            raise PermanentStorageError(f"invalid store key {key!r}")
        return self.root / key

    def _tmp_for(self, path: Path) -> Path:
        """A fresh name in `.partial/` (made with the store) for a write that will end at
        `path`, whose folders are made now."""
        self._mkdir_chain(path.parent)
        return self.root / PARTIAL / secrets.token_hex(8)

    def _mkdir_chain(self, directory: Path) -> None:
        missing = []
        while not directory.exists() and directory != self.root:
            missing.append(directory)
            directory = directory.parent
        for item in reversed(missing):
            item.mkdir(mode=0o700, exist_ok=True)

    def _write(self, key: str, writer) -> None:
        final = self._path(key)
        tmp = None
        try:
            tmp = self._tmp_for(final)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                writer(handle)
            os.replace(tmp, final)
        except OSError as exc:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            raise _failed("write", key, exc) from None

    def put_bytes(self, key: str, data: bytes) -> None:
        self._write(key, lambda handle: handle.write(data))

    def put_file(self, key: str, path: Path) -> None:
        def copy(handle) -> None:
            with open(path, "rb") as source:
                shutil.copyfileobj(source, handle, CHUNK)

        self._write(key, copy)

    def put_if_absent(self, key: str, data: bytes, md5: str = "") -> bool:
        """Create `key` with `data` only if no object has that key: True if this call created
        it, False if one was already there (its bytes untouched). Atomic against concurrent
        callers, and a reader never sees the object half-written: the complete file is linked
        into place, and link(2) fails if the name exists. (S3: PutObject with
        `If-None-Match: *`, whose 412 Precondition Failed means False.)"""
        final = self._path(key)
        tmp = None
        try:
            tmp = self._tmp_for(final)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.link(tmp, final)
        except FileExistsError:
            return False
        except OSError as exc:
            raise _failed("create", key, exc) from None
        finally:
            if tmp is not None:
                tmp.unlink(missing_ok=True)
        return True

    def copy(self, src: str, dst: str) -> None:
        """A second name for the same file (a hard link: objects are never rewritten in place,
        and deleting one name leaves the other)."""
        source, final = self._path(src), self._path(dst)
        try:
            self._mkdir_chain(final.parent)
            os.link(source, final)
        except FileExistsError:
            return
        except FileNotFoundError:
            raise MissingObject(f"missing object {src}") from None
        except OSError as exc:
            raise _failed("copy", src, exc) from None

    def get_bytes(self, key: str, max_bytes: int) -> bytes:
        path = self._path(key)
        try:
            with open(path, "rb") as handle:
                data = handle.read(max_bytes + 1)
        except FileNotFoundError:
            raise MissingObject(f"missing object {key}") from None
        if len(data) > max_bytes:
            raise PermanentStorageError(f"object {key} is larger than {max_bytes} bytes")
        return data

    def fetch(self, key: str, dest: Path, max_bytes: int) -> None:
        """Stream into a private file, counting bytes: the object's stated size is not trusted."""
        try:
            source = open(self._path(key), "rb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:
            raise MissingObject(f"missing object {key}") from None
        fetch_into(key, source, dest, max_bytes)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def size(self, key: str) -> int:
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            raise MissingObject(f"missing object {key}") from None

    def delete_many(self, keys: Iterable[str]) -> None:
        """`delete` for each key, one after another (S3 sends them in batches)."""
        for key in keys:
            self.delete(key)

    def delete(self, key: str) -> bool:
        """Idempotent: an object that is already gone counts as deleted (returns False)."""
        path = self._path(key)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        self._prune(path.parent)
        return True

    def _prune(self, directory: Path) -> None:
        """Remove directories left empty by a delete, up to (not including) the root."""
        while directory != self.root:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        base = self._path(prefix.rstrip("/")) if prefix else self.root
        if not base.is_dir():
            return
        for directory, dirs, files in os.walk(base):
            if directory == str(self.root):
                dirs[:] = [d for d in dirs if d != PARTIAL]
            for name in sorted(files):
                if name.startswith(".tmp-"):  # an older version's partial write
                    continue
                path = Path(directory, name)
                try:
                    info = path.stat()
                except FileNotFoundError:  # deleted while listing
                    continue
                yield ObjectInfo(str(path.relative_to(self.root)), info.st_size, info.st_mtime)

    def list_prefixes(self, prefix: str) -> list[str]:
        """The next level of `prefix/` (like an S3 delimiter listing), without descending."""
        base = self._path(prefix.rstrip("/"))
        if not base.is_dir():
            return []
        return sorted(f"{prefix.rstrip('/')}/{e.name}" for e in os.scandir(base) if e.is_dir())

    def abandoned_writes(self, before: float) -> list[ObjectInfo]:
        """Files in `.partial/` last written before `before`: a live write touches its file
        as it goes, so one untouched for longer than any write may take was abandoned."""
        found = []
        with contextlib.suppress(FileNotFoundError):
            for entry in os.scandir(self.root / PARTIAL):
                with contextlib.suppress(FileNotFoundError):  # finished meanwhile
                    info = entry.stat(follow_symlinks=False)
                    if info.st_mtime < before:
                        found.append(ObjectInfo(f"{PARTIAL}/{entry.name}", info.st_size,
                                                info.st_mtime))  # fmt: skip
        return sorted(found, key=lambda o: o.key)

    def delete_abandoned(self, keys: Iterable[str]) -> None:
        for key in keys:
            folder, _, name = key.partition("/")
            if folder != PARTIAL or not re.fullmatch(r"[0-9a-f]+", name):
                raise PermanentStorageError(f"not a partial write: {key!r}")
            (self.root / PARTIAL / name).unlink(missing_ok=True)


def _failed(action: str, key: str, exc: OSError) -> PermanentStorageError:
    """A write's OSError as the store's error: a full disk is `DiskFull` (naming the root by its
    setting, `store.root`), anything else permanent."""
    if no_space(exc):
        return DiskFull(STORE_ROOT, key)
    return PermanentStorageError(f"cannot {action} {key}: {exc.strerror}")

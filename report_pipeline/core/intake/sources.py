"""Report sources: where monthly reports are read from, behind one small interface.

A source holds `<YYYY-MM>/<any name>.pdf` under its root (a local directory, or an S3 prefix in
`s3_source.py`). Files are named by a `ReportRef`: the source's name plus the path relative to
its root. A ref's path is never shown in a message; `key` is the opaque id used in run config.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from report_pipeline.core.intake.intake import RefusedInput, check_month
from report_pipeline.core.storage.store import OverCap, copy_capped


def is_month(name: str) -> bool:
    try:
        check_month(name)
    except RefusedInput:
        return False
    return True


def eligible(name: str) -> bool:
    """A report is `*.pdf` (any case) and not a hidden file."""
    return name.lower().endswith(".pdf") and not name.startswith(".")


@dataclass(frozen=True)
class ReportRef:
    source: str
    rel: str  # `<YYYY-MM>/<name>` or another path inside the source; never shown

    @property
    def month(self) -> str | None:
        """The month folder the file sits in directly, if any."""
        parts = self.rel.split("/")
        return parts[0] if len(parts) == 2 and is_month(parts[0]) else None

    @property
    def key(self) -> str:
        """An opaque, stable id for the file: safe in run config, tags and logs."""
        return hashlib.sha256(self.rel.encode("utf-8", "surrogateescape")).hexdigest()[:20]


@dataclass(frozen=True)
class Entry:
    ref: ReportRef
    size: int
    mtime_ns: int
    # when the bytes last changed: the later of mtime and ctime locally (a `cp -p` copy keeps an
    # old mtime, its ctime is new), LastModified on S3. "Still arriving", and a new content's
    # arrival (core/intake/arrivals.py)
    changed_ns: int
    fingerprint: str  # changes whenever the file may have changed; no name in it


class ReportSource(Protocol):
    name: str

    def months(self) -> list[tuple[str, int]]:
        """Month folders with a change token (0 = unknown: rescan every time)."""

    def entries(self, month: str) -> list[Entry]:
        """The month's eligible report files."""

    def authorize(self, reference: str) -> ReportRef | None:
        """The ref if `reference` lies in this source, None if it is not this source's; raises
        RefusedInput when it is inside but may not be read."""

    def opened(self, ref: ReportRef, workdir: Path, max_bytes: int):
        """A context manager yielding a local path with the ref's bytes (re-authorized); a
        remote source downloads them into `workdir`, a private directory the caller owns."""

    def register(self, ref: ReportRef, month: str, source_hash: str, size: int) -> ReportRef:
        """Make the validated file the month's report in this source; returns where it is."""

    def changed_ns(self, ref: ReportRef) -> int:
        """When the ref's bytes last changed (ns since the epoch), re-authorized: the later of
        mtime and ctime locally, LastModified on S3."""


def registered_name(source_hash: str) -> str:
    """Content-addressed: registering the same bytes twice finds the first copy."""
    return f"{source_hash[:16]}.pdf"


class LocalInboxSource:
    """The embedded default: a local directory `<root>/<YYYY-MM>/*.pdf`."""

    def __init__(self, name: str, root: Path | str) -> None:
        self.name = name
        self.root = Path(root)

    def _real_root(self) -> Path:
        return self.root.resolve()

    def months(self) -> list[tuple[str, int]]:
        root = self._real_root()
        if not root.is_dir():
            return []
        return [
            (e.name, e.stat(follow_symlinks=False).st_mtime_ns)
            for e in os.scandir(root)
            if is_month(e.name) and e.is_dir(follow_symlinks=False)
        ]

    def entries(self, month: str) -> list[Entry]:
        root = self._real_root()
        folder = root / check_month(month)
        if not folder.is_dir():
            return []
        found = []
        for item in os.scandir(folder):
            if not eligible(item.name):
                continue
            if item.is_symlink() and not Path(item.path).resolve().is_relative_to(root):
                continue  # a link that leaves the source is never read
            try:
                info = os.stat(item.path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append(_entry(ReportRef(self.name, f"{month}/{item.name}"), info))
        return found

    def authorize(self, reference: str) -> ReportRef | None:
        if "://" in reference:
            return None
        lexical = Path(os.path.abspath(reference))
        root = self._real_root()
        if not (lexical.is_relative_to(root) or lexical.is_relative_to(os.path.abspath(self.root))):
            return None
        real = lexical.resolve()
        if not real.is_relative_to(root):
            raise RefusedInput("not_authorized", "reference is a link that leaves its source")
        _regular(real)
        return ReportRef(self.name, real.relative_to(root).as_posix())

    def path_of(self, ref: ReportRef) -> Path:
        """The ref's file, authorized again: inside the root after links, and a regular file."""
        root = self._real_root()
        if ref.source != self.name or ".." in ref.rel.split("/"):
            raise RefusedInput("not_authorized", "reference is outside its source")
        real = (root / ref.rel).resolve()
        if not real.is_relative_to(root):
            raise RefusedInput("not_authorized", "reference is a link that leaves its source")
        return _regular(real)

    @contextmanager
    def opened(self, ref: ReportRef, workdir: Path, max_bytes: int) -> Iterator[Path]:
        yield self.path_of(ref)

    def changed_ns(self, ref: ReportRef) -> int:
        info = os.stat(self.path_of(ref))
        return max(info.st_mtime_ns, info.st_ctime_ns)

    def register(self, ref: ReportRef, month: str, source_hash: str, size: int) -> ReportRef:
        if ref.month == month and eligible(ref.rel.rsplit("/", 1)[-1]):
            return ref
        target = ReportRef(self.name, f"{check_month(month)}/{registered_name(source_hash)}")
        folder = self._real_root() / month
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / registered_name(source_hash)).exists():
            _copy_verified(
                self.path_of(ref), folder / registered_name(source_hash), source_hash, size
            )
        return target


def _entry(ref: ReportRef, info: os.stat_result) -> Entry:
    changed = max(info.st_mtime_ns, info.st_ctime_ns)
    fingerprint = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
    return Entry(ref, info.st_size, info.st_mtime_ns, changed, fingerprint)


def _regular(path: Path) -> Path:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise RefusedInput("missing", "no such report in the source") from None
    except OSError as exc:
        raise RefusedInput("unreadable", f"report cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise RefusedInput("not_regular", "reference is not a regular file")
    return path


def _copy_verified(source: Path, target: Path, source_hash: str, size: int) -> None:
    """Copy under a hidden temporary name (scanners skip it), check size and hash, rename."""
    tmp = target.parent / f".tmp-{secrets.token_hex(8)}"
    digest = hashlib.sha256()
    try:
        with open(source, "rb") as src, open(tmp, "xb") as out:
            try:
                copied = copy_capped(src, out, size, digest)
            except OverCap:  # it grew since intake
                copied = -1
        if copied != size or digest.hexdigest() != source_hash:
            raise RefusedInput("changed", "the report changed during intake; submit it again")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)

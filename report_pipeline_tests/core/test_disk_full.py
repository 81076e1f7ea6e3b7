"""A full disk is its own failure (issue 33, case 2): the store's and the work root's ENOSPC
become `DiskFull`, naming the root by its setting and never its path, nothing is left under a
final key, and the janitor deletes nothing it cannot record (the guard's dead letter of its own:
defs/test_guard.py). The same on a real full filesystem, with Dagster runs:
faults/test_fault_disk_full.py."""

from __future__ import annotations

import errno
import os
from datetime import timedelta

import pytest

from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.retention import janitor
from report_pipeline.core.scratch.workdir import create_workdir, new_lease, private_workdir
from report_pipeline.core.storage import local_store
from report_pipeline.core.storage.local_store import PARTIAL, LocalStore
from report_pipeline.core.storage.store import (
    STORE_ROOT,
    WORK_ROOT,
    DiskFull,
    PermanentStorageError,
)

KEY = "archive/inbox-2026-10/r1/images/abc.png"


class _Full:
    """A file on a full disk: it opens, and refuses every byte."""

    def __init__(self, fd: int, *_args) -> None:
        os.close(fd)

    def write(self, _data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def __enter__(self) -> _Full:
        return self

    def __exit__(self, *_exc) -> None:
        return None


@pytest.fixture
def full_store(tmp_path, monkeypatch) -> LocalStore:
    store = LocalStore(tmp_path / "store")
    monkeypatch.setattr(local_store.os, "fdopen", _Full)
    return store


@pytest.mark.parametrize("write", ["put_bytes", "put_if_absent", "put_file"])
def test_a_full_store_is_disk_full_naming_its_setting_and_leaves_nothing(
    full_store, write, tmp_path
):
    source = tmp_path / "png"
    source.write_bytes(b"png")
    argument = source if write == "put_file" else b"png"
    with pytest.raises(DiskFull) as failed:
        getattr(full_store, write)(KEY, argument)
    assert failed.value.root == STORE_ROOT and not failed.value.transient
    assert str(failed.value).startswith("store.root is full (no space left on device) while "
                                        f"writing {KEY}")  # fmt: skip
    assert str(tmp_path) not in str(failed.value)
    assert not full_store.exists(KEY) and list((full_store.root / PARTIAL).iterdir()) == []


def test_another_write_error_stays_a_plain_permanent_error(tmp_path, monkeypatch):
    store = LocalStore(tmp_path / "store")

    def denied(fd, *_args):
        os.close(fd)
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(local_store.os, "fdopen", denied)
    with pytest.raises(PermanentStorageError) as failed:
        store.put_bytes(KEY, b"x")
    assert not isinstance(failed.value, DiskFull)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_the_work_root_filling_inside_a_workdir_is_disk_full(tmp_path, code):
    lease = new_lease("run/step", utc_now(), 60, 15)
    with pytest.raises(DiskFull) as failed, private_workdir(tmp_path / "work", lease):
        raise OSError(code, os.strerror(code))
    assert failed.value.root == WORK_ROOT and str(tmp_path) not in str(failed.value)
    assert list((tmp_path / "work").rglob("w-*")) == []  # removed all the same


def test_other_errors_in_a_workdir_pass_unchanged(tmp_path):
    lease = new_lease("run/step", utc_now(), 60, 15)
    with pytest.raises(FileNotFoundError), private_workdir(tmp_path / "work", lease):
        raise FileNotFoundError(errno.ENOENT, "gone")


class _FullAuditStore(LocalStore):
    """A store with no room for one more object (the janitor's audit events)."""

    def put_bytes(self, key: str, data: bytes) -> None:
        raise DiskFull(STORE_ROOT, key)


def test_the_janitor_deletes_nothing_it_cannot_record(tmp_path):
    now = utc_now()
    store = _FullAuditStore(tmp_path / "store")
    dead = create_workdir(tmp_path / "work", new_lease("dead/step", now - timedelta(hours=2),
                                                       60, 15))  # fmt: skip
    with pytest.raises(DiskFull):
        janitor.run(store, tmp_path / "work", now, RetentionPolicy())
    assert dead.exists()  # its event could not be written: it stays for the next pass
    done = janitor.run(LocalStore(tmp_path / "store"), tmp_path / "work", now,
                       RetentionPolicy())  # fmt: skip
    assert [e.item for e in done.deletions] == [dead.name] and not dead.exists()

"""A writer killed in the middle of a LocalStore write: what it leaves is invisible to readers,
overdue for the retention check after lease + short clock, and removed by the next janitor pass
with an audit event. S3 has no partial writes (one PutObject each), checked on the same calls."""

import os
import signal
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from report_pipeline.core.checks import retention_audit
from report_pipeline.core.retention import deletion_log, janitor
from report_pipeline.core.storage.local_store import PARTIAL, LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import PermanentStorageError

PART = 1 << 20
WRITER = """
import sys
from report_pipeline.core.storage.local_store import LocalStore
LocalStore(sys.argv[1]).put_file("archive/r/rev/images/abc.png", sys.argv[2])
"""


def killed_mid_write(store: LocalStore, tmp_path) -> None:
    """A real process writes from a pipe that delivers part of the bytes, and is SIGKILLed once
    its first chunk (1 MiB, shutil's copy buffer here) is on disk."""
    fifo = tmp_path / "source"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store.root), str(fifo)])
    with open(fifo, "wb") as feed:
        feed.write(b"x" * (PART + 1000))
        feed.flush()
        deadline = time.monotonic() + 20
        while not list((store.root / PARTIAL).glob("*")) and time.monotonic() < deadline:
            time.sleep(0.02)
        while sum(f.stat().st_size for f in (store.root / PARTIAL).glob("*")) < PART:
            time.sleep(0.02)  # the writer has copied what it was given
            assert time.monotonic() < deadline
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)


def work_check(store, settings, now):
    outcomes = retention_audit.audit_all(store, settings.work_root, now, settings.retention)
    return {o.name: o for o in outcomes}["work_material_deleted_by_deadline"]


@pytest.mark.slow
def test_a_write_killed_midway_is_swept_after_its_hold_with_an_audit_event(
    store: LocalStore, settings, tmp_path
):
    killed_mid_write(store, tmp_path)
    [partial] = list((store.root / PARTIAL).iterdir())
    assert stat.S_IMODE(partial.stat().st_mode) == 0o600
    assert stat.S_IMODE((store.root / PARTIAL).stat().st_mode) == 0o700
    assert list(store.list("")) == [] and not store.exists("archive/r/rev/images/abc.png")
    with pytest.raises(PermanentStorageError, match="invalid store key"):
        store.get_bytes(f"{PARTIAL}/{partial.name}", 10)

    started = datetime.fromtimestamp(partial.stat().st_mtime, UTC)
    hold = settings.retention.unfinished_hold
    early = janitor.run(store, settings.work_root, started + hold - timedelta(minutes=1),
                        settings.retention)  # fmt: skip
    assert early.deletions == [] and partial.exists()  # a write may still be live: kept
    assert work_check(store, settings, started + hold + timedelta(minutes=5)).passed  # grace

    late = started + hold + timedelta(minutes=11)
    overdue = work_check(store, settings, late)
    assert not overdue.passed
    assert overdue.metadata["oldest_overdue_item"] == f"partial write {partial.name}"
    assert overdue.metadata["overdue_bytes"] == PART

    sweep = janitor.run(store, settings.work_root, late, settings.retention)
    [event] = sweep.deletions
    assert (event.kind, event.item, event.bytes, event.objects) == (
        "partial_write", partial.name, PART, 1)  # fmt: skip
    assert not partial.exists()
    assert deletion_log.read(store, late - timedelta(days=1)) == [event]  # the audit stream has it
    assert work_check(store, settings, late).passed
    assert janitor.run(store, settings.work_root, late, settings.retention).deletions == []


def test_completed_writes_leave_nothing_partial(store: LocalStore):
    store.put_bytes("a/b", b"1")
    assert store.put_if_absent("a/c", b"2") and not store.put_if_absent("a/c", b"3")
    assert store.abandoned_writes(time.time() + 3600) == []
    assert [o.key for o in store.list("")] == ["a/b", "a/c"]


def test_only_partial_writes_can_be_deleted_as_abandoned(store: LocalStore):
    store.put_bytes("a/b", b"1")
    for key in ("a/b", f"{PARTIAL}/../a/b", f"{PARTIAL}/x y"):
        with pytest.raises(PermanentStorageError, match="not a partial write"):
            store.delete_abandoned([key])
    assert store.get_bytes("a/b", 1) == b"1"


def test_s3_has_no_partial_writes(s3):
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    store.put_bytes("a/b", b"1")
    assert store.abandoned_writes(time.time() + 3600) == []

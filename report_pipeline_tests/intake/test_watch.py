"""The sensor's cursor, without Dagster: every tick lists each month's files, and a month whose
files did not change reads no file and not even its ledger."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from report_pipeline.core.intake import month_report
from report_pipeline.core.intake.sources import LocalInboxSource
from report_pipeline.core.intake.watch import (
    BudgetedLooks,
    Cursor,
    changed_months,
    judge,
    record,
)
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import fixture_pdf

PAST = 1_700_000_000


class CountingSource(LocalInboxSource):
    """The local inbox, counting the month folders it lists and the files read from it."""

    listed = 0
    opened_files = 0

    def entries(self, month):
        self.listed += 1
        return super().entries(month)

    def opened(self, ref, workdir, max_bytes):
        self.opened_files += 1
        return super().opened(ref, workdir, max_bytes)


class CountingStore(LocalStore):
    lists = 0

    def list(self, prefix):
        self.lists += 1
        return super().list(prefix)


@pytest.fixture
def watcher(tmp_path, settings):
    """One tick of the sensor's core: (the changes to admit, the notes), cursor carried over."""
    source = CountingSource("inbox", tmp_path / "inbox")
    store = CountingStore(tmp_path / "store")
    cursor = Cursor()

    def tick(now=None, settle=0, sweep=False, max_bytes=1 << 30):
        notes: list[str] = []
        now = now or time.time_ns()
        listings = changed_months([source], cursor, now, settle, sweep, lambda m: m <= "2026-10",
                                  notes)  # fmt: skip
        changes = []
        with month_report.reader([source], settings, "test") as read:
            looks = BudgetedLooks(store, read, max_bytes, now)
            for listing in listings:
                decision = looks.look(listing, notes)
                if decision and (change := judge(cursor, listing, decision, sweep, notes)):
                    changes.append(change)
                    record(cursor, change)
            looks.note_waiting(notes)
        return changes, notes

    tick.source, tick.store, tick.cursor = source, store, cursor
    return tick


def test_a_quiet_tick_lists_each_month_but_reads_no_file_and_no_ledger(drop, watcher):
    for month in ["2026-07", "2026-08", "2026-09"]:
        drop("no_images.pdf", folder=month)
    first, _ = watcher()
    assert [c.month for c in first] == ["2026-07", "2026-08", "2026-09"]
    source, store = watcher.source, watcher.store
    opened, lists = source.opened_files, store.lists
    assert watcher() == ([], []) and source.listed == 6
    assert (source.opened_files, store.lists) == (opened, lists)  # nothing read, no ledger


def test_a_file_overwritten_in_place_is_seen_on_the_next_tick(drop, watcher):
    path = drop("no_images.pdf", folder="2026-09")
    (first,) = watcher()[0]
    path.write_bytes(fixture_pdf("repeated_image.pdf").read_bytes())  # same name, same folder
    os.utime(path, (PAST, PAST))
    (change,) = watcher()[0]
    assert change.entry.ref.rel == "2026-09/no_images.pdf" and change.sha256 != first.sha256


def test_a_copy_with_an_older_mtime_is_seen_on_the_next_tick(drop, watcher, tmp_path):
    drop("no_images.pdf", folder="2026-09", name="report.pdf", age=0)
    watcher()
    time.sleep(0.03)  # the file system's clock passes the month's first look
    corrected = drop("repeated_image.pdf", folder="elsewhere", name="corrected.pdf", age=500)
    shutil.copy2(corrected, tmp_path / "inbox" / "2026-09" / "corrected.pdf")  # cp -p
    (change,) = watcher()[0]
    assert change.entry.ref.rel == "2026-09/corrected.pdf"


def test_files_still_arriving_and_months_not_yet_partitions_wait(drop, watcher):
    arrived = drop("no_images.pdf", folder="2026-09").stat().st_ctime_ns
    drop("no_images.pdf", folder="2026-11")
    # "now" is a second after the file landed, on the file system's own clock (which a faked
    # process clock does not move)
    changes, notes = watcher(now=arrived + 10**9, settle=60 * 10**9)
    assert changes == [] and notes == [
        "inbox 2026-09: a report is still arriving; waiting",
        "inbox 2026-11: not a monthly partition yet; waiting",
    ]
    assert [c.month for c in watcher()[0]] == ["2026-09"]


def test_notes_name_the_file_within_its_month_folder_and_the_cursor_holds_no_names(
    drop, watcher, tmp_path
):
    drop("no_images.pdf", folder="2026-09", name="Board Pack.pdf")
    watcher()
    time.sleep(0.03)
    drop("no_images.pdf", folder="2026-09", name="Board Pack copy.pdf", age=-5)
    changes, notes = watcher()
    assert changes == [] and notes == [
        "inbox 2026-09/Board Pack copy.pdf: same content as the month's report (Board Pack.pdf)"
    ]
    assert "Board" not in watcher.cursor.dumps() and str(tmp_path) not in watcher.cursor.dumps()
    assert Cursor.loads('{"v": 1}').months == {}  # an older cursor format starts afresh


def test_a_months_first_look_is_not_cut_in_two_by_the_byte_budget(drop, watcher):
    for month in ["2026-07", "2026-08"]:
        drop("no_images.pdf", folder=month, name="a.pdf", age=10)
        drop("repeated_image.pdf", folder=month, name="b.pdf")
    changes, notes = watcher(max_bytes=1)
    assert [c.month for c in changes] == ["2026-07"] and watcher.source.opened_files == 2
    assert notes == ["1 more month waits to be read on the next tick"]
    assert [c.month for c in watcher(max_bytes=1)[0]] == ["2026-08"]

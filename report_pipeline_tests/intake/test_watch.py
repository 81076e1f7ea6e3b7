"""The sensor's cursor, without Dagster: a quiet tick lists no month folder and reads no report."""

from __future__ import annotations

import os
import time

from report_pipeline.core.intake.sources import LocalInboxSource
from report_pipeline.core.intake.watch import SWEEP_SECONDS, Cursor, changed_heads, record

OLD = 1_600_000_000 * 10**9


class CountingSource(LocalInboxSource):
    """The local inbox, counting how many month folders it lists."""

    listed = 0

    def entries(self, month):
        self.listed += 1
        return super().entries(month)


def look(source, cursor, now=None, settle=0, sweep=False, notes=None):
    now = now or time.time_ns()
    return changed_heads(
        source, cursor, now, settle, sweep, lambda m: m <= "2026-10", [] if notes is None else notes
    )


def settle_folders(root):
    for folder in root.iterdir():
        os.utime(folder, ns=(OLD, OLD))


def test_a_quiet_tick_lists_no_month_folder(drop, tmp_path):
    for month in ["2026-07", "2026-08", "2026-09"]:
        drop("no_images.pdf", folder=month)
    settle_folders(tmp_path / "inbox")
    source, cursor = CountingSource("inbox", tmp_path / "inbox"), Cursor()
    first = look(source, cursor)
    assert [c.month for c in first] == ["2026-07", "2026-08", "2026-09"] and source.listed == 3
    for change in first:
        record(cursor, change, source_hash="h-" + change.month)
    assert look(source, Cursor.loads(cursor.dumps())) == [] and source.listed == 3
    drop("repeated_image.pdf", folder="2026-08", name="v2.pdf", age=-10)
    (change,) = look(source, cursor)
    assert change.month == "2026-08" and change.entry.ref.rel == "2026-08/v2.pdf"
    assert source.listed == 4  # only the folder that changed


def test_a_sweep_finds_a_file_rewritten_in_place(drop, tmp_path, source):
    path = drop("no_images.pdf", folder="2026-09")
    settle_folders(tmp_path / "inbox")
    cursor = Cursor()
    (change,) = look(source, cursor)
    record(cursor, change, source_hash="h1")
    path.write_bytes(path.read_bytes() + b"\n%")  # same name, same folder token
    assert look(source, cursor) == []
    assert cursor.sweep_due(time.time_ns() + SWEEP_SECONDS * 10**9)
    assert [c.month for c in look(source, cursor, sweep=True)] == ["2026-09"]


def test_files_still_arriving_and_months_not_yet_partitions_wait(drop, source):
    arrived = drop("no_images.pdf", folder="2026-09").stat().st_ctime_ns
    drop("no_images.pdf", folder="2026-11")
    cursor, notes = Cursor(), []
    # "now" is a second after the file landed, on the file system's own clock (which a faked
    # process clock does not move)
    assert look(source, cursor, now=arrived + 10**9, settle=60 * 10**9, notes=notes) == []
    assert notes == [
        "inbox 2026-09: a report is still arriving; waiting",
        "inbox 2026-11: not a monthly partition yet; waiting",
    ]
    assert [c.month for c in look(source, cursor)] == ["2026-09"]


def test_record_says_whether_the_bytes_are_new_and_the_cursor_holds_no_names(
    drop, source, tmp_path
):
    drop("no_images.pdf", name="Confidential Board Pack.pdf")
    cursor = Cursor()
    (change,) = look(source, cursor)
    assert record(cursor, change, source_hash="h1") is True
    assert record(cursor, change, source_hash="h1") is False
    assert record(cursor, change, refused="encrypted") is False
    assert "Confidential" not in cursor.dumps() and str(tmp_path) not in cursor.dumps()
    assert Cursor.loads('{"v": 0}').months == {}  # an older cursor format starts afresh

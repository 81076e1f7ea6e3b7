"""Which file is the month's report: the one whose content arrived last (core/intake/arrivals.py),
on real files and, for the pure rule, on entries built by hand."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import pytest

from report_pipeline.core.intake import ledger as ledgers
from report_pipeline.core.intake.arrivals import Ledger, decide, iso_ns, name_of, ns_of
from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.month_report import choose_for_run, look, reader
from report_pipeline.core.intake.sources import Entry, LocalInboxSource, ReportRef
from report_pipeline.core.model import keys
from report_pipeline.core.pipeline import run_report
from report_pipeline_tests.conftest import fixture_pdf

OLD = 1_700_000_000  # seconds: mtimes long before any test runs
S = 1_000_000_000


@pytest.fixture
def month(clock) -> str:
    return clock.month(-3)


@pytest.fixture
def folder(tmp_path: Path, month: str) -> Path:
    path = tmp_path / "inbox" / month
    path.mkdir(parents=True)
    return path


def put(folder: Path, fixture: str, name: str, mtime: int | None = None) -> Path:
    target = folder / name
    shutil.copyfile(fixture_pdf(fixture), target)
    if mtime is not None:
        os.utime(target, (mtime, mtime))
    return target


def later() -> None:
    """Let the file system's (coarse) clock move past the last look before the next event."""
    time.sleep(0.03)


def sha_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def looked(tmp_path, month, store, settings):
    """Look at the month as the sensor or a run does: (decision, names of the files read)."""

    def run():
        source = LocalInboxSource("inbox", tmp_path / "inbox")
        reads = []
        with reader([source], settings, "test") as read:

            def counted(entry):
                reads.append(name_of(entry))
                return read(entry)

            decision = look(store, month, source.entries(month), ["inbox"], counted)
        later()
        return decision, reads

    return run


def chosen_name(decision) -> str:
    return name_of(decision.file)


def test_the_first_look_reads_every_file_and_the_newest_mtime_wins_as_before(
    folder, looked, store, month
):
    put(folder, "no_images.pdf", "b.pdf", OLD + 100)
    put(folder, "repeated_image.pdf", "c.pdf", OLD + 300)
    put(folder, "truncated_jpeg.pdf", "a.pdf", OLD + 200)
    decision, reads = looked()
    assert chosen_name(decision) == "c.pdf" and sorted(reads) == ["a.pdf", "b.pdf", "c.pdf"]
    assert decision.superseded == ("a.pdf", "b.pdf")
    assert decision.report.arrived_at == iso_ns((OLD + 300) * S)  # recorded by its mtime
    again, reads = looked()
    assert (again.file, again.ledger, reads) == (decision.file, decision.ledger, [])
    assert [i.key for i in store.list("months")] == [keys.arrivals_key(month, 1)]  # one write


def test_a_copy_that_keeps_an_older_mtime_is_a_new_arrival_and_wins(folder, looked, tmp_path):
    put(folder, "no_images.pdf", "report.pdf", OLD + 200)
    assert chosen_name(looked()[0]) == "report.pdf"
    corrected = put(tmp_path, "truncated_jpeg.pdf", "corrected.pdf", OLD)  # older than report.pdf
    shutil.copy2(corrected, folder / "corrected.pdf")  # cp -p: the mtime kept, the ctime now
    decision, reads = looked()
    assert chosen_name(decision) == "corrected.pdf" and reads == ["corrected.pdf"]
    assert decision.superseded == ("report.pdf",)
    assert ns_of(decision.report.arrived_at) > (OLD + 200) * S  # when it was copied


def test_a_file_overwritten_in_place_is_a_new_arrival_and_wins(folder, looked):
    older = put(folder, "no_images.pdf", "older.pdf", OLD + 100)
    put(folder, "repeated_image.pdf", "newer.pdf", OLD + 200)
    assert chosen_name(looked()[0]) == "newer.pdf"
    older.write_bytes(fixture_pdf("truncated_jpeg.pdf").read_bytes())
    os.utime(older, (OLD + 100, OLD + 100))  # even with its old mtime put back
    decision, reads = looked()
    assert chosen_name(decision) == "older.pdf" and reads == ["older.pdf"]
    assert decision.report.sha256 == sha_of(older)


def test_a_renamed_or_touched_old_file_does_not_win(folder, looked):
    old = put(folder, "no_images.pdf", "old.pdf", OLD + 100)
    put(folder, "repeated_image.pdf", "current.pdf", OLD + 200)
    first, _ = looked()
    renamed = old.rename(folder / "old-renamed.pdf")
    os.utime(renamed)  # touched: its mtime is now the newest in the folder
    decision, reads = looked()
    assert reads == ["old-renamed.pdf"]  # a new fingerprint is read, once
    assert chosen_name(decision) == "current.pdf"
    kept = decision.ledger.arrivals[sha_of(renamed)]
    assert kept == first.ledger.arrivals[sha_of(renamed)]  # its arrival is the one recorded
    assert kept.name == "old.pdf"


def test_a_superseded_content_copied_back_does_not_win(folder, looked, tmp_path):
    first = put(folder, "no_images.pdf", "first.pdf", OLD + 100)
    looked()
    shutil.copy2(put(tmp_path, "repeated_image.pdf", "second.pdf", OLD), folder / "second.pdf")
    assert chosen_name(looked()[0]) == "second.pdf"
    shutil.copyfile(first, folder / "first-again.pdf")  # new mtime and ctime, old content
    decision, reads = looked()
    assert reads == ["first-again.pdf"]
    assert chosen_name(decision) == "second.pdf"
    assert decision.superseded == ("first-again.pdf", "first.pdf")


def test_when_the_latest_content_is_gone_nothing_older_comes_back(
    folder, looked, tmp_path, store, settings, month
):
    put(folder, "no_images.pdf", "original.pdf", OLD + 100)
    looked()
    newer = put(folder, "repeated_image.pdf", "corrected.pdf")
    digest = sha_of(newer)
    looked()
    newer.unlink()
    decision, _ = looked()
    assert decision.report.sha256 == digest and decision.file is None
    source = LocalInboxSource("inbox", tmp_path / "inbox")
    with pytest.raises(RefusedInput) as caught:
        choose_for_run(store, [source], month, settings, "test")
    assert caught.value.code == "report_gone"
    assert caught.value.message == (
        f"the month's latest report (corrected.pdf, sha256 {digest[:12]}) is no longer in the "
        "inbox; put it back or add a newer one"
    )
    assert str(tmp_path) not in caught.value.message


@pytest.mark.slow
def test_a_gone_latest_report_the_archive_holds_is_reused_not_replaced(
    folder, looked, tmp_path, store, settings, month
):
    put(folder, "no_images.pdf", "original.pdf", OLD + 100)
    looked()
    newer = put(folder, "repeated_image.pdf", "corrected.pdf")
    manifest = run_report(store, newer, settings, "inbox", month)
    looked()
    newer.unlink()
    chosen = choose_for_run(store, [LocalInboxSource("inbox", tmp_path / "inbox")], month,
                            settings, "test")  # fmt: skip
    assert chosen.ref is None and chosen.archived.reused
    assert chosen.archived.ref.revision == manifest.parent_revision
    assert (chosen.file.name, chosen.file.pages) == ("corrected.pdf", manifest.counts.pages)


# The pure rule, on entries built by hand: (name, mtime, changed) in seconds; content by name.


def entry(name: str, mtime: int, changed: int | None = None, size: int = 100) -> Entry:
    changed = mtime if changed is None else changed
    ref = ReportRef("inbox", f"2020-01/{name}")
    return Entry(ref, size, mtime * S, changed * S, f"{name}:{mtime}:{changed}")


class Contents:
    """A `Read` that knows each file's content, and counts what it reads."""

    def __init__(self, **contents: str) -> None:
        self.contents = contents
        self.reads: list[str] = []

    def __call__(self, item: Entry) -> tuple[str, int]:
        self.reads.append(name_of(item))
        content = self.contents[name_of(item)]
        if content.startswith("!"):
            raise RefusedInput(content[1:], "cannot be read")
        return content, item.size


def again(ledger: Ledger) -> Ledger:
    """As stored: the next look reads it from the store."""
    return Ledger(ledger.month, ledger.generation + 1, ledger.first_look_ns, ledger.arrivals,
                  ledger.fingerprints)  # fmt: skip


def test_reading_stops_once_nothing_left_can_have_arrived_later():
    files = [entry("a.pdf", 100), entry("b.pdf", 200), entry("c.pdf", 300)]
    read = Contents(**{"a.pdf": "A", "b.pdf": "B", "c.pdf": "C", "d.pdf": "D", "e.pdf": "E"})
    first = decide(Ledger("2020-01"), files, read, 1000 * S, ["inbox"])
    assert sorted(read.reads) == ["a.pdf", "b.pdf", "c.pdf"]  # the first look reads every file
    assert first.ledger.first_look_ns == 300 * S  # on the files' clock: their last change
    read.reads.clear()
    new = [entry("d.pdf", 50, changed=2000), entry("e.pdf", 60, changed=3000)]
    decision = decide(again(first.ledger), files + new, read, 4000 * S, ["inbox"])
    assert read.reads == ["e.pdf"]  # d.pdf changed before e.pdf arrived: it cannot be later
    assert decision.report.sha256 == "E" and decision.superseded == (
        "a.pdf",
        "b.pdf",
        "c.pdf",
        "d.pdf",
    )


def test_a_file_that_cannot_be_read_blocks_only_if_it_could_be_the_latest():
    files = [entry("a.pdf", 100), entry("b.pdf", 200)]
    ledger = again(decide(Ledger("2020-01"), files, Contents(**{"a.pdf": "A", "b.pdf": "B"}),
                          1000 * S, ["inbox"]).ledger)  # fmt: skip
    newer = Contents(**{"huge.pdf": "!too_large"})
    blocked = decide(
        ledger, [*files, entry("huge.pdf", 10, changed=2000)], newer, 3000 * S, ["inbox"]
    )
    assert blocked.blocked[1].code == "too_large" and name_of(blocked.blocked[0]) == "huge.pdf"
    older = decide(ledger, [*files, entry("huge.pdf", 10, changed=150)], newer, 3000 * S, ["inbox"])
    assert older.blocked is None and older.report.sha256 == "B"


def test_concurrent_ledger_writes_merge_and_keep_the_earliest_arrival(store):
    base = ledgers.load(store, "2020-01")
    one = decide(base, [entry("a.pdf", 100), entry("b.pdf", 300)],
                 Contents(**{"a.pdf": "A", "b.pdf": "B"}), 1000 * S, ["inbox"])  # fmt: skip
    files = [entry("copy-of-b.pdf", 200), entry("c.pdf", 250)]
    other = decide(base, files, Contents(**{"copy-of-b.pdf": "B", "c.pdf": "C"}), 1000 * S,
                   ["inbox"])  # fmt: skip
    assert ledgers.commit(store, base, one.ledger).generation == 1
    merged = ledgers.commit(store, base, other.ledger)  # generation 1 is taken: merged, then 2
    assert merged.generation == 2 and merged == ledgers.load(store, "2020-01")
    assert sorted(merged.arrivals) == ["A", "B", "C"]
    assert merged.arrivals["B"].name == "copy-of-b.pdf"  # seen at 200 by one, 300 by the other
    assert len(merged.fingerprints) == 4


def test_the_ledger_keeps_only_its_newest_generations_and_no_path(store, tmp_path):
    ledger = ledgers.load(store, "2020-01")
    for n in range(1, 6):
        found = decide(ledger, [entry(f"v{n}.pdf", n * 100)], Contents(**{f"v{n}.pdf": f"V{n}"}),
                       1000 * S, ["inbox"])  # fmt: skip
        ledger = ledgers.commit(store, ledger, found.ledger)
    kept = sorted(info.key for info in store.list(keys.arrivals_prefix("2020-01")))
    assert kept == [keys.arrivals_key("2020-01", g) for g in (3, 4, 5)]
    assert ledgers.load(store, "2020-01") == ledger and len(ledger.arrivals) == 5
    assert str(tmp_path) not in (tmp_path / "store" / kept[-1]).read_text()


def test_arrival_times_keep_the_microsecond_through_their_iso_form():
    ns = 1_760_000_000_123_456_789
    assert iso_ns(ns) == "2025-10-09T08:53:20.123456Z"
    assert ns_of(iso_ns(ns)) == ns // 1000 * 1000

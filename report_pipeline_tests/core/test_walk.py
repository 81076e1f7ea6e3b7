"""The page walk (finding what each page draws) is confined like the decoders, and bounded:
fan-outs, deep nesting, a pattern painted into too many records and floods of form fields end
with a reason that names the page, in bounded time (fixtures/_walks.py)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time

import pytest

from fixtures import _walks as walks
from fixtures._many_paints import imaged_pages
from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.model.settings import DecodeSettings, WorkerSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.worker import pdf_pages, walk
from report_pipeline.core.worker.decoder import decode_in_process
from report_pipeline_tests.conftest import fixture_pdf


@pytest.mark.parametrize("name", sorted(walks.REASONS))
def test_a_hostile_walk_is_refused_with_its_reason_and_page_in_bounded_time(name, store, settings):
    before = os.times()
    started = time.monotonic()
    with pytest.raises(RefusedInput) as refused:
        run_report(store, fixture_pdf(name), settings, "inbox", "2026-10")
    cpu = sum(os.times()[:4]) - sum(before[:4])
    assert refused.value.code == walks.REASONS[name]
    assert refused.value.message.startswith("finding the images of page 1 stopped: ")
    assert time.monotonic() - started < 60 and cpu < 60
    assert list(store.list("archive")) == []  # nothing archived for a report it cannot account


def test_an_image_free_pattern_painted_100000_times_is_accepted_in_bounded_time(tmp_path):
    """hostile_walk_pattern.pdf's page with a cell that draws no image, as a hatch: its first
    paint runs it, the rest replay nothing. Its cost is the content stream's, not 100,000 runs."""
    hatched = tmp_path / "hatched.pdf"
    hatched.write_bytes(walks.pattern(cell=b"0 0 1 1 re f"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    counts = walk.image_counts(hatched, 1, DecodeSettings()).counts
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert counts == [(0, 0)]
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime < 20  # about 2 s


def test_replayed_records_count_against_the_reports_cap(tmp_path):
    """Six pages that each paint an image pattern 9,000 times: each page within its cap, the
    report past its 50,000 records at page 6."""
    path = tmp_path / "imaged.pdf"
    path.write_bytes(imaged_pages(6, 9_000))
    with pytest.raises(walk.WalkFailed) as failed:
        walk.image_counts(path, 6, DecodeSettings())
    assert failed.value.reason == "too_many_images"
    assert failed.value.message.startswith("finding the images of page 6 stopped")


def test_the_walk_runs_outside_the_run_process(store, settings):
    """Planning the monthly report: the parent's own peak memory does not grow with the walk."""
    counts = walk.image_counts(fixture_pdf("monthly_report.pdf"), 140, settings.decode).counts
    assert len(counts) == 140 and sum(images for images, _ in counts) == 423
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss > 0


def test_a_walk_past_its_memory_is_memory_limit_naming_the_page(tmp_path):
    """A colour profile inflating to 256 MiB, with 64 MiB more than the fork allowed: the
    walk's child stops at its memory limit, and the parent says so, naming the page."""
    bomb = tmp_path / "icc_bomb.pdf"
    bomb.write_bytes(walks.icc_bomb(256))
    with pytest.raises(walk.WalkFailed) as failed:
        walk.image_counts(bomb, 1, DecodeSettings(memory_bytes=64 << 20))
    assert failed.value.reason == "memory_limit"
    assert failed.value.message.startswith("finding the images of page 1 stopped")


def test_a_walk_past_its_wall_time_is_stopped(tmp_path):
    hurried = DecodeSettings(walk_seconds=0.0)
    with pytest.raises(walk.WalkFailed) as failed:
        walk.image_counts(fixture_pdf("monthly_report.pdf"), 140, hurried)
    assert failed.value.reason == "walk_timeout"


def test_fewer_pages_than_intake_counted_is_a_mismatch(tmp_path):
    with pytest.raises(walk.WalkFailed) as failed:
        walk.image_counts(fixture_pdf("repeated_image.pdf"), 99, DecodeSettings())
    assert failed.value.reason == "page_count_mismatch"


def test_settings_reach_the_walk(tmp_path, store):
    settings = WorkerSettings(tmp_path / "w", decode=DecodeSettings(walk_cpu_seconds=30))
    manifest = run_report(store, fixture_pdf("repeated_image.pdf"), settings, "inbox", "2026-10")
    assert manifest.state == "complete"


def test_a_name_that_is_not_utf8_is_read_as_bytes_and_the_walk_goes_on(store, settings):
    """odd_names.pdf draws /A, /Im#FF and /B: all three are records, nothing on stderr."""
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from report_pipeline.core.worker.pdf_pages import open_pdf, page_images; "
         "print(len(page_images(open_pdf(Path(sys.argv[1])), 1)))",
         str(fixture_pdf("odd_names.pdf"))],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert (out.stdout.strip(), out.stderr) == ("3", "")
    manifest = run_report(store, fixture_pdf("odd_names.pdf"), settings, "inbox", "2026-10")
    assert manifest.state == "complete" and manifest.counts.archived == 3


def test_a_page_whose_stream_broke_off_is_never_called_complete(run_fixture):
    """broken_streams.pdf: page 1's form is damaged Flate data, page 2's gives up after a flood
    of syntax errors, page 3's has one stray token MuPDF skips: pages 1 and 2 are incomplete
    (what their forms drew after the break is unknown), and so is the manifest. Page 4's inline
    image, cut off by the end of its stream, is a record: quarantined, and the page complete."""
    manifest = run_fixture("broken_streams.pdf")
    assert manifest.state == "incomplete"
    assert {row.page: (row.state, row.broken_streams) for row in manifest.pages} == {
        1: ("incomplete", walks.BROKEN[1]), 2: ("incomplete", walks.BROKEN[2]),
        3: ("complete", 0), 4: ("complete", 0),
    }  # fmt: skip
    assert manifest.counts.archived == 8  # every image found is archived all the same
    (cut_off,) = [c for c in manifest.children if c.state == "quarantined"]
    assert (cut_off.page, cut_off.origin, cut_off.quarantine_reason) == (4, "inline", "truncated")


def test_a_page_mupdf_cannot_load_is_not_complete_and_the_rest_is_archived(run_fixture):
    """unloadable_page.pdf: page 1's form field is its own parent, so MuPDF cannot load the page
    (poppler lists nothing on it either); the report is processed, not refused."""
    manifest = run_fixture("unloadable_page.pdf")
    assert manifest.state == "incomplete" and manifest.counts.archived == 1
    assert [(row.page, row.state, row.broken_streams) for row in manifest.pages] == [
        (1, "incomplete", 1), (2, "complete", 0),
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["image_paths.pdf", "monthly_report.pdf"])
def test_each_page_is_interpreted_once_the_decoders_take_the_planned_draws(
    name, store, tmp_path, monkeypatch
):
    """The planning walk (its own child) finds each page's draws; the decoders build their
    images from those and interpret again only a page that draws an inline image, whose parsed
    object only a walk hands over. Counted in this process: the plain loop decodes here."""
    walked: list[int] = []
    real = pdf_pages.page_draws

    def counted(doc, number, limit):
        walked.append(number)
        return real(doc, number, limit)

    monkeypatch.setattr(pdf_pages, "page_draws", counted)
    settings = WorkerSettings(tmp_path / "work")
    manifest = run_report(store, fixture_pdf(name), settings, "inbox", "2026-10", 0,
                          decode_in_process)  # fmt: skip
    inline = {child.page for child in manifest.children if child.xref == 0}
    assert sorted(walked) == sorted(inline)
    assert manifest.state == "complete" and manifest.counts.accounted == manifest.counts.expected

import os
import shutil

import pytest

from report_pipeline.core.intake.intake import (
    RefusedInput,
    inspect_pdf,
    report_id_for,
    revision_for,
    stage_stream,
)
from report_pipeline.core.intake.month_report import choose_for_run
from report_pipeline.core.intake.sources import LocalInboxSource
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.refusals import UNUSABLE


@pytest.mark.parametrize(("name", "code"), sorted(UNUSABLE.items()))
def test_unusable_reports_are_refused_with_a_reason(name, code):
    with pytest.raises(RefusedInput) as caught:
        inspect_pdf(fixture_pdf(name), Limits())
    assert caught.value.code == code
    assert name not in str(caught.value)  # no source names in messages


def test_page_cap():
    with pytest.raises(RefusedInput, match="too_many_pages"):
        inspect_pdf(fixture_pdf("monthly_report.pdf"), Limits(max_pages=139))
    assert inspect_pdf(fixture_pdf("monthly_report.pdf"), Limits(max_pages=140)).pages == 140


def test_staging_streams_with_a_byte_cap_and_private_random_names(tmp_path):
    source = fixture_pdf("no_images.pdf")
    staged, digest, size = stage_stream(source, tmp_path, max_bytes=10_000)
    assert size == source.stat().st_size and len(digest) == 64
    assert staged.name != source.name and oct(staged.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(RefusedInput, match="too_large"):
        stage_stream(fixture_pdf("monthly_report.pdf"), tmp_path, max_bytes=10_000)


def test_a_file_over_the_cap_is_refused_before_a_byte_is_copied(tmp_path):
    huge = tmp_path / "huge.pdf"
    with open(huge, "wb") as handle:  # sparse: the size is known without reading
        handle.truncate(1 << 30)
    workdir = tmp_path / "work"
    workdir.mkdir()
    with pytest.raises(RefusedInput, match="too_large"):
        stage_stream(huge, workdir, max_bytes=1 << 20)
    assert list(workdir.iterdir()) == []  # no private copy was even started


def test_an_unreadable_source_is_refused_without_its_path(tmp_path):
    with pytest.raises(RefusedInput) as caught:
        stage_stream(tmp_path / "secret-name.pdf", tmp_path, 100)
    assert caught.value.code == "unreadable" and "secret-name" not in str(caught.value)


def find_report(root, month):
    """The month's report as a UI launch picks it: the file whose content arrived last (at the
    month's first look, the newest mtime), and the other files it supersedes."""
    work = root.parent / f"{root.name}-state"
    store, settings = LocalStore(work / "store"), PipelineSettings(work / "work")
    chosen = choose_for_run(store, [LocalInboxSource("inbox", root)], month, settings, "test")
    return root / chosen.ref.rel, chosen.file.superseded


def test_a_month_without_a_report_is_refused(tmp_path):
    with pytest.raises(RefusedInput, match="no_report"):
        find_report(tmp_path / "inbox", "2026-10")


def test_at_a_months_first_look_the_newest_report_wins_and_the_rest_are_named(tmp_path):
    month = tmp_path / "inbox" / "2026-10"
    month.mkdir(parents=True)
    for n, name in enumerate(["a.pdf", "b.PDF", "c.pdf"]):
        (month / name).write_bytes(fixture_pdf("no_images.pdf").read_bytes() + b"%" * n)
        os.utime(month / name, ns=(10**18 + n, 10**18 + n))
    (month / "notes.txt").write_text("ignored")
    path, superseded = find_report(tmp_path / "inbox", "2026-10")
    assert path.name == "c.pdf" and superseded == ("a.pdf", "b.PDF")


def test_symlinks_leaving_the_inbox_are_ignored(tmp_path):
    outside = tmp_path / "outside.pdf"
    shutil.copyfile(fixture_pdf("no_images.pdf"), outside)
    (tmp_path / "inbox" / "2026-10").mkdir(parents=True)
    (tmp_path / "inbox" / "2026-10" / "link.pdf").symlink_to(outside)
    with pytest.raises(RefusedInput, match="no_report"):
        find_report(tmp_path / "inbox", "2026-10")


@pytest.mark.parametrize("month", ["2026-13", "26-10", "2026-1", "../x"])
def test_bad_months_are_refused(tmp_path, month):
    with pytest.raises(RefusedInput, match="bad_month"):
        find_report(tmp_path / "inbox", month)


def test_revision_is_the_idempotency_key():
    rid = report_id_for("inbox", "2026-10")
    assert rid == "inbox-2026-10"
    base = revision_for(rid, "a" * 64, "1")
    assert base == revision_for(rid, "a" * 64, "1")
    assert len({base, revision_for(rid, "b" * 64, "1"), revision_for(rid, "a" * 64, "2")}) == 3

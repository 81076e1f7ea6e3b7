"""One current revision per month (core/archive/succession.py, core/model/current.py): a
correction or a newer extractor replaces the month's revision instead of piling up beside it,
keeps the month's archive deadline, carries review decisions over to the same images, and an
older revision never comes back."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pymupdf
import pytest

from fixtures import _damaged as damaged
from report_pipeline.core.archive.months import current, latest_archived
from report_pipeline.core.archive.publishing import publish, record_children
from report_pipeline.core.archive.succession import is_newer
from report_pipeline.core.checks.month_checks import archive_matches_manifest
from report_pipeline.core.model import current as month_record
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.records import Manifest, SourceFile
from report_pipeline.core.model.settings import EXTRACTOR_VERSION, PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.retention import deletion_log
from report_pipeline.core.review.decide import decide
from report_pipeline.core.review.pages import decide_page, pending_pages
from report_pipeline.core.review.queue import pending
from report_pipeline.core.steps import extract, stage
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.clock import Clock
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow


def month_now(store) -> Manifest:
    return latest_archived(store, MONTH)[1]


MONTH = Clock(utc_now()).month(-1)
NEXT = str(int(EXTRACTOR_VERSION) + 1)  # an upgrade


def run(
    store, pdf: Path, tmp_path: Path, version: str = EXTRACTOR_VERSION, arrived: str = ""
) -> Manifest:
    """The core pipeline on `pdf` for MONTH, with intake's arrival when `arrived` is given."""
    settings = PipelineSettings(tmp_path / "work", extractor_version=version)
    staged, tasks = stage(store, pdf, "inbox", MONTH, 0, settings, "test")
    if arrived:
        name = pdf.name
        source = SourceFile("inbox", name, pdf.stat().st_size, staged.ref.source_hash,
                            staged.page_count, arrived)  # fmt: skip
        staged = replace(staged, source_file=source)
    done = [record_children(store, extract(store, task, settings, "test"), 1)[0] for task in tasks]
    return publish(store, staged, done, settings.retention)[0]


def objects(store, manifest: Manifest) -> list[str]:
    return [
        o.key for o in store.list(keys.archive_prefix(manifest.report_id, manifest.parent_revision))
    ]


def superseded_events(store, clock) -> list:
    return [e for e in deletion_log.read(store, clock.now.replace(year=clock.now.year - 1))
            if e.kind == "superseded"]  # fmt: skip


@pytest.fixture(scope="module")
def reviewed_month(tmp_path_factory, small_report) -> Path:
    """The monthly report in small (conftest.small_report) archived for MONTH, then both of its
    quarantined images decided: the truncated scan rejected, the PNG-declared-JPEG accepted (a
    LocalStore folder)."""
    root = tmp_path_factory.mktemp("reviewed")
    store = LocalStore(root / "store")
    run_report(store, small_report, PipelineSettings(root / "w"), "inbox", MONTH)
    now = utc_now()
    for item in pending(store, [MONTH]):
        decision = "reject" if item.reason == "truncated" else "accept"
        decide(store, MONTH, item.sequence, decision, "josé", "checked", now)
    return root / "store"


@pytest.fixture
def reviewed(reviewed_month, tmp_path) -> LocalStore:
    shutil.copytree(reviewed_month, tmp_path / "store")
    return LocalStore(tmp_path / "store")


@pytest.fixture(scope="module")
def corrected(tmp_path_factory, small_report) -> Path:
    """That report with page 1 removed: 2 pages (the broken scans' pages, now 1 and 2), the
    same image streams."""
    path = tmp_path_factory.mktemp("corrected") / "small_report_v2.pdf"
    with pymupdf.open(small_report) as doc:
        doc.delete_page(0)
        doc.save(path)
    return path


def test_a_correction_replaces_the_months_revision_keeping_its_deadline_and_decisions(
    reviewed, corrected, tmp_path, clock
):
    before = month_now(reviewed)
    assert {c.review.decision for c in before.children if c.review} == {"accepted", "rejected"}
    after = run(reviewed, corrected, tmp_path)
    assert month_now(reviewed) == after and after.counts.pages == 2
    assert after.deadlines.archive_delete_by == before.deadlines.archive_delete_by
    # the decisions carried over to the same images: nobody decides twice
    assert pending(reviewed, [MONTH]) == []
    decided = {c.review.decision: c for c in after.children if c.review}
    assert decided["rejected"].state == "quarantined" and decided["accepted"].state == "archived"
    assert decided["accepted"].quarantine_reason is None and decided["accepted"].review.evidence
    assert archive_matches_manifest(reviewed, after).passed  # no orphaned evidence either
    # the revision it replaced: a tombstone naming its successor, its objects deleted, audited
    old = store_json.read_manifest(
        reviewed, keys.manifest_key(before.report_id, before.parent_revision)
    )  # fmt: skip
    assert old.state == "expired" and old.superseded_by == after.parent_revision
    assert objects(reviewed, old) == [keys.manifest_key(old.report_id, old.parent_revision)]
    assert before.parent_revision in {e.revision for e in superseded_events(reviewed, clock)}
    chain = month_record.history(reviewed, MONTH)
    assert [h.cause for h in chain] == ["archived", "review", "review", "correction"]
    assert {h.archive_delete_by for h in chain} == {before.deadlines.archive_delete_by}
    complete = [m for _, m in _manifests(reviewed) if m.state == "complete"]
    assert complete == [after]  # one complete revision in the month, not one per event


def _manifests(store):
    from report_pipeline.core.archive.months import month_manifests

    return list(month_manifests(store, MONTH))


def test_a_newer_extractor_replaces_the_revision_and_an_older_one_never_comes_back(store, tmp_path):
    pdf = fixture_pdf("truncated_jpeg.pdf")
    first = run(store, pdf, tmp_path)
    upgraded = run(store, pdf, tmp_path, version=NEXT)
    assert month_now(store) == upgraded and upgraded.extractor_version == NEXT
    assert upgraded.deadlines.archive_delete_by == first.deadlines.archive_delete_by
    assert [h.cause for h in month_record.history(store, MONTH)] == ["archived", "reextraction"]
    live = [k for k in store.list(keys.ARCHIVE) if not k.key.endswith("manifest.json")]
    assert all(f"/{upgraded.parent_revision}/" in k.key for k in live)  # one copy of the month
    again = run(store, pdf, tmp_path)  # a code location still on the old extractor
    assert again == upgraded and month_now(store) == upgraded
    assert len(month_record.history(store, MONTH)) == 2


def test_the_revision_a_run_expects_is_used_only_while_the_month_names_it(store, tmp_path):
    """manifest_table reads the manifest its run published, with the generation of the month's
    record that named it; once a later generation exists, the month is read as without them."""
    pdf = fixture_pdf("truncated_jpeg.pdf")
    first = run(store, pdf, tmp_path)
    first_key = keys.manifest_key(first.report_id, first.parent_revision)
    assert latest_archived(store, MONTH, first_key, 1) == (first_key, first)
    upgraded = run(store, pdf, tmp_path, version=NEXT)
    upgraded_key = keys.manifest_key(upgraded.report_id, upgraded.parent_revision)
    assert latest_archived(store, MONTH, first_key, 1) == (upgraded_key, upgraded)
    assert latest_archived(store, MONTH, upgraded_key, 2) == (upgraded_key, upgraded)
    assert latest_archived(store, MONTH, first_key) == (upgraded_key, upgraded)  # no generation
    assert latest_archived(store, clock_month_without_archive()) is None


def test_publish_tells_the_generation_that_names_the_manifest_it_returns(store, tmp_path):
    pdf = fixture_pdf("truncated_jpeg.pdf")
    settings = PipelineSettings(tmp_path / "work")
    told: list[int] = []

    def published() -> Manifest:
        staged, tasks = stage(store, pdf, "inbox", MONTH, 0, settings, "test")
        done = [record_children(store, extract(store, t, settings, "t"), 1)[0] for t in tasks]
        return publish(store, staged, done, settings.retention, told=told.append)[0]

    first = published()
    again = published()  # the month holds it: reused, same generation
    assert again == first and told == [1, 1]
    assert month_record.head(store, MONTH).generation == 1


def clock_month_without_archive() -> str:
    return Clock(utc_now()).month(-3)


def test_a_decision_on_a_damaged_page_carries_over_to_the_same_page(store, tmp_path, clock):
    """Page 1 accepted, page 2 rejected; a newer extractor reads the same broken bytes on the
    same pages for the same reason: both decisions carry over, page 3 still waits."""
    pdf = fixture_pdf("cut_off_streams.pdf")
    run(store, pdf, tmp_path)
    decide_page(store, MONTH, 1, "accept", "ana", "as printed", clock.now)
    decide_page(store, MONTH, 2, "reject", "ana", "the chart stops", clock.now)
    upgraded = run(store, pdf, tmp_path, version=NEXT)
    assert month_now(store) == upgraded and upgraded.extractor_version == NEXT
    decided = {row.page: row.review for row in upgraded.pages}
    assert (decided[1].decision, decided[2].decision, decided[3]) == ("accepted", "rejected", None)
    assert (
        decided[2].note == "the chart stops" and decided[2].evidence == upgraded.pages[1].evidence
    )
    assert [item.page for item in pending_pages(store, [MONTH])] == [3]


def test_a_damaged_page_with_other_broken_bytes_is_a_new_question(store, tmp_path, clock):
    """A corrected report whose page 1 breaks off elsewhere: page 1's decision does not carry
    over (other bytes), page 2's does (the same bytes, page and reason)."""
    run(store, fixture_pdf("cut_off_streams.pdf"), tmp_path)
    decide_page(store, MONTH, 1, "accept", "ana", "", clock.now)
    decide_page(store, MONTH, 2, "accept", "ana", "", clock.now)
    corrected = tmp_path / "cut_off_streams_v2.pdf"
    corrected.write_bytes(damaged.cut_off_streams(first_cut=b"q 9 0 0 9 20"))
    after = run(store, corrected, tmp_path / "v2")
    assert month_now(store) == after
    assert [row.review is not None for row in after.pages] == [False, True, False]
    assert [item.page for item in pending_pages(store, [MONTH])] == [1, 3]


def test_a_revision_of_an_earlier_arrival_never_replaces_the_months(store, tmp_path, clock):
    late, early = iso(clock.now), iso(clock.now.replace(year=clock.now.year - 1))
    newer = run(store, fixture_pdf("truncated_jpeg.pdf"), tmp_path, arrived=late)
    stale = run(store, fixture_pdf("repeated_image.pdf"), tmp_path, arrived=early)
    assert stale == newer == month_now(store)  # the run that staged it gets the month's back
    (other,) = [m for _, m in _manifests(store) if m.parent_revision != newer.parent_revision]
    assert other.state == "expired" and other.superseded_by == newer.parent_revision
    fresh = run(store, fixture_pdf("repeated_image.pdf"), tmp_path / "b", arrived=iso(clock.now))
    assert fresh == newer  # its revision is superseded for good: the same bytes stay replaced


def test_a_month_archived_before_records_is_adopted_then_replaced(store, tmp_path):
    first = run(store, fixture_pdf("truncated_jpeg.pdf"), tmp_path)
    store.delete_many([o.key for o in store.list(keys.MONTHS)])  # as an older version left it
    assert current(store, MONTH).head is None and month_now(store) == first
    second = run(store, fixture_pdf("repeated_image.pdf"), tmp_path)
    assert [h.cause for h in month_record.history(store, MONTH)] == ["adopted", "correction"]
    assert month_now(store) == second
    assert store_json.read_manifest(
        store, keys.manifest_key(first.report_id, first.parent_revision)
    ).superseded_by == second.parent_revision  # fmt: skip


def test_two_writers_of_one_generation_cannot_both_win(store):
    head = month_record.MonthHead(MONTH, 0, "inbox-x", "r1", "", "archived", "t", "d", "h", "4")
    assert month_record.advance(store, None, head)
    first = month_record.head(store, MONTH)
    assert month_record.advance(store, first, replace(head, revision="r2"))
    assert not month_record.advance(store, first, replace(head, revision="r3"))
    assert month_record.head(store, MONTH).revision == "r2"
    assert month_record.heads(store) == {MONTH: month_record.head(store, MONTH)}


def test_which_revision_is_newer(clock):
    manifest = month_now_stub(clock)
    later = replace(manifest, source_hash="b", created_at="2")
    assert is_newer(later, manifest) and not is_newer(manifest, later)
    v10 = replace(manifest, extractor_version="10")
    assert is_newer(v10, replace(manifest, extractor_version="9"))
    with_arrival = _arrived(replace(later, created_at="0"), "2026-01-02T00:00:00.000Z")
    assert is_newer(with_arrival, _arrived(manifest, "2026-01-01T00:00:00.000Z"))


def _arrived(manifest: Manifest, at: str) -> Manifest:
    source = SourceFile("inbox", "r.pdf", 1, manifest.source_hash, 1, at)
    return replace(manifest, source_file=source)


def month_now_stub(clock) -> Manifest:
    from report_pipeline.core.archive.manifest import build_manifest
    from report_pipeline.core.model.clock import deadlines_for
    from report_pipeline.core.model.messages import RevisionRef
    from report_pipeline.core.model.settings import RetentionPolicy

    ref = RevisionRef("inbox-x", MONTH, "a", "4", "r")
    return build_manifest(ref, {1: 0}, [], deadlines_for(clock.now, RetentionPolicy()), "1")


def test_a_decision_on_a_month_archived_before_records_adopts_it_first(store, tmp_path, clock):
    run(store, fixture_pdf("truncated_jpeg.pdf"), tmp_path)
    store.delete_many([o.key for o in store.list(keys.MONTHS)])  # as an older version left it
    (item,) = pending(store, [MONTH])
    done = decide(store, MONTH, item.sequence, "reject", "ana", "", clock.now)
    assert [h.cause for h in month_record.history(store, MONTH)] == ["adopted", "review"]
    assert month_now(store).parent_revision == done.revision

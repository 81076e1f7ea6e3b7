"""Quarantine review in the core (core/review/), on both stores: the queue, a safe look at an
item, and decisions that publish a new revision of the month, audited; a damaged page is a
page-level quarantine, accepted as it is or rejected."""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
from datetime import timedelta
from pathlib import Path

import pytest
from PIL import Image

from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.checks.month_checks import archive_matches_manifest, manifest_complete
from report_pipeline.core.checks.pages import pages_drawn_whole
from report_pipeline.core.model import store_json
from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.keys import manifest_key
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.retention import deletion_log
from report_pipeline.core.review.decide import decide, events
from report_pipeline.core.review.pages import decide_page, pending_pages
from report_pipeline.core.review.queue import ReviewError, pending
from report_pipeline.core.review.show import show
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.clock import Clock
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow


def archive(store, tmp_path: Path, name: str, month: str) -> None:
    settings = PipelineSettings(tmp_path / f"work-{month}")
    manifest = run_report(store, fixture_pdf(name), settings, "inbox", month)
    assert manifest.state == "complete"


def by_reason(store, month: str) -> dict:
    return {item.reason: item for item in pending(store, [month])}


def current(store, month: str):
    return latest_archived(store, month)[1]


def occurrence(manifest, sequence: int):
    """The manifest's one child record numbered `sequence`."""
    (child,) = [c for c in manifest.children if c.sequence == sequence]
    return child


@pytest.fixture(scope="module")
def archived_once(tmp_path_factory, small_report) -> tuple[Path, str]:
    """The monthly report in small (conftest.small_report: its broken scans on pages 2 and 3)
    archived once for the module (a LocalStore's folder): each test decides on its own copy.
    Both stores: the scan test below, and test_cli_quarantine.py."""
    root, month = tmp_path_factory.mktemp("archived"), Clock(utc_now()).month(-1)
    manifest = run_report(LocalStore(root / "store"), small_report,
                          PipelineSettings(root / "work"), "inbox", month)  # fmt: skip
    assert manifest.state == "complete"
    return root / "store", month


@pytest.fixture
def monthly(archived_once, tmp_path):
    original, month = archived_once
    shutil.copytree(original, tmp_path / "store")
    return LocalStore(tmp_path / "store"), month


def test_the_queue_lists_each_undecided_quarantined_object_with_its_evidence(monthly):
    store, month = monthly
    queue = by_reason(store, month)
    assert sorted(queue) == ["signature_mismatch", "truncated"]
    mismatch, truncated = queue["signature_mismatch"], queue["truncated"]
    assert (mismatch.pages, truncated.pages) == ((3,), (2,))
    assert mismatch.declared_type == "jpeg" and mismatch.stream_bytes > 0
    assert "/quarantine/" in mismatch.evidence_key and "/quarantine/" in truncated.evidence_key
    assert json.loads(json.dumps(mismatch.as_json()))["pages"] == [3]


def test_show_writes_the_evidence_and_a_preview_into_a_private_folder(monthly, tmp_path):
    store, month = monthly
    item = by_reason(store, month)["signature_mismatch"]
    shown = show(store, month, item.sequence, tmp_path / "look")
    assert stat.S_IMODE((tmp_path / "look").stat().st_mode) == 0o700
    for path in (shown.evidence, shown.preview):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert shown.evidence.read_bytes() == store.get_bytes(item.evidence_key, 1 << 20)
    assert shown.preview.read_bytes().startswith(b"\x89PNG") and shown.no_preview == ""
    truncated = by_reason(store, month)["truncated"]
    cut = show(store, month, truncated.sequence, tmp_path / "cut")
    assert cut.preview is None and cut.no_preview.startswith(("truncated", "undecodable"))
    with pytest.raises(ReviewError) as used:
        show(store, month, item.sequence, tmp_path / "look")  # not an empty folder
    assert used.value.code == "bad_input"
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    with pytest.raises(ReviewError) as linked:
        show(store, month, item.sequence, tmp_path / "link")  # never written through a link
    assert linked.value.code == "bad_input" and not any((tmp_path / "empty").iterdir())


def test_show_makes_the_missing_parents_of_its_folder_private_and_leaves_others_alone(
    monthly, tmp_path
):
    store, month = monthly
    item = by_reason(store, month)["signature_mismatch"]
    (tmp_path / "home").mkdir(mode=0o755)
    os.chmod(tmp_path / "home", 0o755)
    previous = os.umask(0o002)  # a permissive umask: what is made is 0700 all the same
    try:
        shown = show(store, month, item.sequence, tmp_path / "home" / "review" / "a" / "307")
    finally:
        os.umask(previous)
    assert shown.evidence == tmp_path / "home" / "review" / "a" / "307" / "evidence.bin"
    for made in ("review", "review/a", "review/a/307"):
        assert stat.S_IMODE((tmp_path / "home" / made).stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o755
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(ReviewError) as blocked:
        show(store, month, item.sequence, tmp_path / "file" / "look")
    assert blocked.value.code == "bad_input" and "cannot make" in blocked.value.message


def test_reject_keeps_it_quarantined_in_a_new_revision_and_it_leaves_the_queue(monthly, clock):
    store, month = monthly
    before = current(store, month)
    item = by_reason(store, month)["truncated"]
    done = decide(store, month, item.sequence, "reject", "ana.lopez", "cut off", clock.now)
    after = current(store, month)
    assert done.changed and after.parent_revision == done.revision != before.parent_revision
    assert after.previous_revision == before.parent_revision
    child = occurrence(after, item.sequence)
    assert child.state == "quarantined" and child.review.decision == "rejected"
    assert (child.review.reviewer, child.review.note) == ("ana.lopez", "cut off")
    assert "truncated" not in by_reason(store, month)
    assert after.counts == before.counts and archive_matches_manifest(store, after).passed
    # the revision decided on is superseded: a tombstone, its objects gone (audited)
    superseded = store_json.read_manifest(
        store, manifest_key(after.report_id, before.parent_revision)
    )
    assert (
        superseded.state == "expired" and superseded.deleted.objects == 9 + 2
    )  # its 7 distinct images and 2 quarantined streams, + its own files
    prefix = f"archive/{after.report_id}/{before.parent_revision}/"
    assert [o.key for o in store.list(prefix)] == [f"{prefix}manifest.json"]
    (event,) = [e for e in deletion_log.read(store, clock.now - timedelta(days=1))
                if e.kind == "superseded"]  # fmt: skip
    assert event.revision == before.parent_revision and event.objects == 9 + 2
    again = decide(store, month, item.sequence, "reject", "ana.lopez", "cut off", clock.now)
    assert not again.changed and current(store, month) == after
    with pytest.raises(ReviewError) as contrary:
        decide(store, month, item.sequence, "accept", "bo", "", clock.now)
    assert contrary.value.code == "already_decided"


def test_accept_archives_the_image_with_the_check_lifted_and_nothing_else_changes(monthly, clock):
    store, month = monthly
    before = current(store, month)
    item = by_reason(store, month)["signature_mismatch"]
    done = decide(store, month, item.sequence, "accept", "bo", "a PNG, fine", clock.now)
    after = current(store, month)
    assert done.decision == "accepted" and after.previous_revision == before.parent_revision
    child = occurrence(after, item.sequence)
    assert child.state == "archived" and child.review.lifted == "signature_mismatch"
    assert child.object_key.startswith(f"archive/{after.report_id}/{after.parent_revision}/")
    assert (child.width, child.height, child.format) == (64, 64, "png")
    assert after.counts.archived == before.counts.archived + 1
    assert after.counts.quarantined == before.counts.quarantined - 1
    others = [c for c in after.children if c.sequence != item.sequence]
    olds = [c for c in before.children if c.sequence != item.sequence]
    assert [c.content_hash for c in others] == [c.content_hash for c in olds]
    assert archive_matches_manifest(store, after).passed
    assert after.deadlines == before.deadlines  # the archive clock is not restarted
    with pytest.raises(ReviewError) as contrary:
        decide(store, month, item.sequence, "reject", "bo", "", clock.now)
    assert contrary.value.code == "already_decided"


def test_accept_is_refused_for_what_no_lifted_check_makes_whole(monthly, clock):
    store, month = monthly
    item = by_reason(store, month)["truncated"]
    with pytest.raises(ReviewError) as refused:
        decide(store, month, item.sequence, "accept", "bo", "", clock.now)
    assert refused.value.code == "cannot_accept" and "reject it" in refused.value.message


def test_a_decision_on_a_revision_that_changed_meanwhile_is_refused(monthly, clock):
    store, month = monthly
    queue = by_reason(store, month)
    seen = current(store, month).parent_revision
    decide(store, month, queue["truncated"].sequence, "reject", "bo", "", clock.now)
    with pytest.raises(ReviewError) as stale:
        decide(store, month, queue["signature_mismatch"].sequence, "reject", "cy", "", clock.now,
               expected_revision=seen)  # fmt: skip
    assert stale.value.code == "revision_changed" and "list" in stale.value.message


@pytest.mark.parametrize(
    ("reviewer", "note", "decision"),
    [("../etc", "", "reject"), ("", "", "reject"), ("bo", "x" * 501, "reject"),
     ("bo", "", "maybe"), ("bo", "cut\noff", "reject"), ("bo", "\u202eok", "reject"),
     ("ana lopez", "", "reject")],
)  # fmt: skip
def test_bad_input_is_refused_before_anything_is_read(tmp_path, clock, reviewer, note, decision):
    store = LocalStore(tmp_path / "store")
    with pytest.raises(ReviewError) as bad:
        decide(store, clock.month(-1), 1, decision, reviewer, note, clock.now)
    assert bad.value.code == "bad_input"
    with pytest.raises(ReviewError) as unknown:
        decide(store, clock.month(-1), 1, "reject", "bo", "", clock.now)
    assert unknown.value.code == "unknown_month"


def test_a_reviewer_named_in_another_script_is_recorded_composed(monthly, clock):
    store, month = monthly
    item = by_reason(store, month)["truncated"]
    done = decide(store, month, item.sequence, "reject", "jose\u0301", "cut off", clock.now)
    assert done.reviewer == "jos\u00e9"
    assert occurrence(current(store, month), item.sequence).review.reviewer == "jos\u00e9"
    assert events(store)[0]["reviewer"] == "jos\u00e9"
    again = decide(store, month, item.sequence, "reject", "李雷", "", clock.now)
    assert not again.changed  # already rejected, whoever asks again


def test_every_decision_is_an_audit_event_without_image_bytes(monthly, clock):
    store, month = monthly
    queue = by_reason(store, month)
    decide(store, month, queue["truncated"].sequence, "reject", "ana", "no", clock.now)
    later = clock.now + timedelta(seconds=1)
    decide(store, month, queue["signature_mismatch"].sequence, "accept", "bo", "ok", later)
    logged = events(store)
    assert [(e["decision"], e["reviewer"], e["lifted"]) for e in logged] == [
        ("rejected", "ana", ""), ("accepted", "bo", "signature_mismatch")]  # fmt: skip
    assert logged[1]["from_revision"] == logged[0]["revision"]
    assert all(len(json.dumps(e)) < 2000 for e in logged)  # no bytes, only facts


def test_a_scan_over_the_pixel_cap_is_accepted_up_to_the_ceiling_and_a_bomb_is_not(
    any_store, tmp_path, clock
):
    month = clock.month(-2)
    archive(any_store, tmp_path, "review_cases.pdf", month)
    scan, jpx = sorted(pending(any_store, [month]), key=lambda i: i.pages)
    assert (scan.reason, jpx.reason) == ("pixel_cap_exceeded", "pixel_cap_exceeded")
    done = decide(any_store, month, scan.sequence, "accept", "bo", "a real scan", clock.now)
    manifest = current(any_store, month)
    child = occurrence(manifest, scan.sequence)
    assert done.decision == "accepted" and (child.width, child.height) == (9000, 8000)
    assert child.review.lifted == "pixel_cap_exceeded" and manifest.state == "complete"
    assert archive_matches_manifest(any_store, manifest).passed
    failed = decide(any_store, month, jpx.sequence, "accept", "bo", "", clock.now)
    assert failed.decision == "accept_failed" and failed.reason.startswith("pixel_cap_exceeded")
    (left,) = pending(any_store, [month])  # still quarantined, undecided, the reason added
    assert left.sequence == jpx.sequence and "accept failed: pixel_cap_exceeded" in left.detail
    again = decide(any_store, month, jpx.sequence, "accept", "bo", "", clock.now)
    assert again.decision == "accept_failed" and not again.changed  # no second revision
    assert current(any_store, month).parent_revision == failed.revision


def test_show_of_a_hostile_jpx_writes_only_the_evidence_within_bounded_memory(tmp_path, clock):
    month, store = clock.month(-2), LocalStore(tmp_path / "store")
    archive(store, tmp_path, "review_cases.pdf", month)
    jpx = max(pending(store, [month]), key=lambda i: i.pages)
    shown = show(store, month, jpx.sequence, tmp_path / "look")
    assert shown.preview is None and shown.no_preview.startswith("pixel_cap_exceeded")
    assert sorted(p.name for p in (tmp_path / "look").iterdir()) == ["evidence.bin", "item.json"]
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        assert resource.getrusage(who).ru_maxrss < 1536 * 1024  # KiB: under 1.5 GiB
    scan = min(pending(store, [month]), key=lambda i: i.pages)  # 9000 x 8000, over the pixel cap
    preview = show(store, month, scan.sequence, tmp_path / "scan").preview
    with Image.open(preview) as image:
        assert image.size == (2048, 1820)  # fits the reviewer's 2048 square, aspect kept


def test_a_reviewed_revision_expires_with_the_month_under_the_archive_clock(
    monthly, tmp_path, clock
):
    from report_pipeline.core.checks.retention_audit import archive_within_retention
    from report_pipeline.core.model.clock import parse_iso
    from report_pipeline.core.model.settings import RetentionPolicy
    from report_pipeline.core.retention import janitor

    store, month = monthly
    queue = by_reason(store, month)
    decide(store, month, queue["signature_mismatch"].sequence, "accept", "bo", "", clock.now)
    decide(store, month, queue["truncated"].sequence, "reject", "bo", "", clock.now)
    manifest = current(store, month)
    deadline = parse_iso(manifest.deadlines.archive_delete_by)
    assert not archive_within_retention(store, deadline + timedelta(days=2), timedelta(0)).passed
    janitor.run(
        store, tmp_path / "janitor-work", deadline + timedelta(minutes=1), RetentionPolicy()
    )
    for revision in {manifest.parent_revision, manifest.previous_revision}:
        kept = [o.key for o in store.list(f"archive/{manifest.report_id}/{revision}/")]
        assert kept == [f"archive/{manifest.report_id}/{revision}/manifest.json"]  # a tombstone
    assert archive_within_retention(store, deadline + timedelta(days=2), timedelta(0)).passed


def test_a_decision_that_died_half_way_completes_when_taken_again(monthly, clock):
    from report_pipeline_tests.faults import Crash, CrashingStore

    store, month = monthly
    item = by_reason(store, month)["truncated"]
    copies = iter(range(100))
    crashing = CrashingStore(store, lambda method, key: method == "copy"
                             and next(copies) == 5)  # fmt: skip
    with pytest.raises(Crash):
        decide(crashing, month, item.sequence, "reject", "bo", "", clock.now)
    assert current(store, month).previous_revision is None  # not published
    done = decide(store, month, item.sequence, "reject", "bo", "", clock.now)
    after = current(store, month)
    assert done.changed and after.parent_revision == done.revision
    assert archive_matches_manifest(store, after).passed
    with pytest.raises(ReviewError) as forked:  # the half-done revision was this decision's
        decide(store, month, by_reason(store, month)["signature_mismatch"].sequence, "reject",
               "cy", "", clock.now, expected_revision=after.previous_revision)  # fmt: skip
    assert forked.value.code == "revision_changed"


def test_a_setting_shortens_how_long_rejected_evidence_is_kept(monthly, tmp_path, clock):
    from report_pipeline.core.model.settings import RetentionPolicy, ReviewSettings
    from report_pipeline.core.retention import janitor

    store, month = monthly
    queue = by_reason(store, month)
    shorter = ReviewSettings(rejected_evidence_days=7)
    decide(store, month, queue["truncated"].sequence, "reject", "bo", "", clock.now, shorter)
    evidence = current(store, month)
    rejected = occurrence(evidence, queue["truncated"].sequence)
    assert rejected.review.evidence_delete_by == iso(clock.now + timedelta(days=7))
    # a later decision copies it into a newer revision: the deadline still finds it there
    decide(store, month, queue["signature_mismatch"].sequence, "reject", "bo", "", clock.now)
    janitor.run(store, tmp_path / "w", clock.now + timedelta(days=6), RetentionPolicy())
    assert store.exists(occurrence(current(store, month), rejected.sequence).object_key)
    sweep = janitor.run(store, tmp_path / "w", clock.now + timedelta(days=7), RetentionPolicy())
    assert [e.kind for e in sweep.deletions] == ["rejected_evidence"]
    after = current(store, month)
    gone = occurrence(after, rejected.sequence)
    kept = occurrence(after, queue["signature_mismatch"].sequence)
    assert gone.object_key is None and "evidence deleted" in gone.quarantine_detail
    assert kept.object_key and store.exists(kept.object_key)  # the archive clock, untouched
    assert archive_matches_manifest(store, after).passed


@pytest.fixture
def damaged_month(tmp_path) -> tuple[LocalStore, str]:
    """cut_off_streams.pdf archived: three damaged pages (fixtures/_damaged.py)."""
    store, month = LocalStore(tmp_path / "store"), Clock(utc_now()).month(-1)
    archive(store, tmp_path, "cut_off_streams.pdf", month)
    return store, month


def test_a_damaged_page_is_queued_with_what_broke_off_and_what_it_drew_before(damaged_month):
    store, month = damaged_month
    pages = {item.page: item for item in pending_pages(store, [month])}
    assert sorted(pages) == [1, 2, 3]
    form = pages[2]
    assert (form.reason, form.broken_streams, form.images) == ("stream_cut_off", 1, 3)
    assert form.detail == "form (object 11): its data ends early, inside the operator r"
    manifest = current(store, month)
    before = [c.sequence for c in manifest.children if c.page == 2][:2]  # /A, then the form's /B
    assert form.drawn == tuple(before) and form.drawn_text.startswith("2 image(s) drawn before")
    assert form.evidence == manifest.pages[1].evidence and len(form.evidence) == 64
    assert {i.reason for i in pending(store, [month])} == {"truncated"}  # page 3's inline image


def test_a_damaged_page_is_accepted_as_it_is_or_rejected_in_a_new_revision(damaged_month, clock):
    store, month = damaged_month
    before = current(store, month)
    done = decide_page(store, month, 1, "accept", "ana.lopez", "as printed", clock.now)
    after = current(store, month)
    assert done.changed and done.page == 1 and after.parent_revision == done.revision
    assert after.previous_revision == before.parent_revision and after.counts == before.counts
    assert after.pages[0].review.decision == "accepted" and after.pages[0].state == "damaged"
    assert after.pages[0].review.evidence == before.pages[0].evidence
    assert archive_matches_manifest(store, after).passed
    rejected = decide_page(store, month, 2, "reject", "bo", "the chart stops half way", clock.now)
    assert [i.page for i in pending_pages(store, [month])] == [3]
    whole = pages_drawn_whole(current(store, month))
    assert not whole.passed and "page 2 rejected by bo: the chart stops half way" in (
        whole.description
    )
    again = decide_page(store, month, 2, "reject", "bo", "", clock.now)
    assert not again.changed and again.revision == rejected.revision
    with pytest.raises(ReviewError) as contrary:
        decide_page(store, month, 2, "accept", "bo", "", clock.now)
    assert contrary.value.code == "already_decided"
    for page in (0, 9):
        with pytest.raises(ReviewError) as unknown:
            decide_page(store, month, page, "accept", "bo", "", clock.now)
        assert unknown.value.code == "unknown_page"
    decided = {e["page"]: e for e in events(store) if e.get("event") == "page_decision"}
    event = decided[1]
    assert (event["decision"], event["reason"], event["reviewer"]) == (
        "accepted", "stream_cut_off", "ana.lopez")  # fmt: skip
    assert event["evidence"] == before.pages[0].evidence


def test_a_page_nested_too_deep_is_reviewed_like_any_damaged_page(tmp_path, clock):
    """hostile_walk_deep.pdf (fixtures/_walks.py): pages 1 and 2 nest forms and patterns deeper
    than the walk follows. Each is queued with its reason and what it drew before, the month is
    complete and pages_drawn_whole names both until a reviewer accepts them."""
    store, month = LocalStore(tmp_path / "store"), clock.month(-1)
    archive(store, tmp_path, "hostile_walk_deep.pdf", month)
    manifest = current(store, month)
    assert manifest_complete(manifest).passed
    pages = {item.page: item for item in pending_pages(store, [month])}
    assert {page: item.reason for page, item in pages.items()} == {
        1: "stream_too_deep", 2: "stream_too_deep"}  # fmt: skip
    assert "nested deeper than 24" in pages[1].detail
    assert pages[1].drawn == tuple(c.sequence for c in manifest.children if c.page == 1)[:2]
    whole = pages_drawn_whole(manifest)
    assert not whole.passed and whole.metadata["damaged_pages"] == "1, 2"
    assert "page 1 (form/.../form (object 11), 25 deep: it is nested deeper than 24" in (
        whole.description
    )
    for page in (1, 2):
        decide_page(store, month, page, "accept", "ana.lopez", "as printed", clock.now)
    assert pages_drawn_whole(current(store, month)).passed
    assert pending_pages(store, [month]) == []


def test_a_whole_page_has_nothing_to_review(monthly, clock):
    store, month = monthly
    with pytest.raises(ReviewError) as whole:
        decide_page(store, month, 1, "accept", "bo", "", clock.now)
    assert whole.value.code == "unknown_page" and "is not damaged" in whole.value.message
    assert pending_pages(store, [month]) == []

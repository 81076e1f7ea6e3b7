"""Deadline markers come before the material they cover (images too, which extraction writes
straight to their archive keys), and material no marker covers is still found (by listing
`staged/` and `work/`, and the unpublished archive of a revision found there), reported and
deleted. Crashes are injected at the
storage boundary; the clock is injected (no sleeps)."""

import json
import os
from datetime import timedelta

import pytest

from report_pipeline.core.checks import retention_audit
from report_pipeline.core.model import store_json
from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.retention import deletion_log, janitor
from report_pipeline.core.scratch.workdir import LEASE_FILE, create_workdir, lease_for
from report_pipeline.core.steps import extract, stage
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.faults import Crash, CrashingStore

pytestmark = pytest.mark.slow

MIN = timedelta(minutes=1)
WORK_CHECK = "work_material_deleted_by_deadline"


@pytest.fixture
def store(any_store):
    """LocalStore and S3Store (moto's S3 server on loopback)."""
    return any_store


def keys(store, prefix):
    return [o.key for o in store.list(prefix)]


def checks(store, settings, now):
    outcomes = retention_audit.audit_all(store, settings.work_root, now, settings.retention)
    return {o.name: o for o in outcomes}


def late(settings, now, extra=11):
    """Past lease + short clock + the checks' 10-minute grace."""
    return now + settings.retention.unfinished_hold + extra * MIN


def staged_pdf(method, key):
    return method == "put_file" and key.startswith("staged/")


def crash_staging(store, settings, after):
    crashing = CrashingStore(store, staged_pdf, after=after)
    with pytest.raises(Crash):
        stage(crashing, fixture_pdf("truncated_jpeg.pdf"), "inbox", "2026-10", 0, settings, "r/s")


def test_a_crash_just_after_the_staged_pdf_finds_its_marker_already_written(store, settings):
    crash_staging(store, settings, after=True)
    now = utc_now()
    assert len(keys(store, "staged")) == 1 and len(keys(store, "index/work")) == 1
    failing = checks(store, settings, late(settings, now))[WORK_CHECK]
    assert not failing.passed and failing.metadata["untracked_items"] == 0  # the index has it
    sweep = janitor.run(store, settings.work_root, late(settings, now), settings.retention)
    assert [e.kind for e in sweep.deletions] == ["working_material"]  # found through its marker
    assert keys(store, "staged") == [] and keys(store, "index/work") == []
    assert all(o.passed for o in checks(store, settings, late(settings, now)).values())


def test_a_crash_between_marker_and_pdf_leaves_a_marker_that_counts_as_done(store, settings):
    crash_staging(store, settings, after=False)
    now = utc_now()
    assert keys(store, "staged") == [] and len(keys(store, "index/work")) == 1
    sweep = janitor.run(store, settings.work_root, late(settings, now), settings.retention)
    assert sweep.deletions == [] and sweep.entries_due == 1
    assert keys(store, "index/work") == []  # nothing to delete: done
    assert all(o.passed for o in checks(store, settings, late(settings, now)).values())


def test_a_crash_before_the_manifest_leaves_the_long_clock_marker_first(store, settings):
    crashing = CrashingStore(store, lambda m, k: m == "put_bytes" and k.endswith("/manifest.json"))
    with pytest.raises(Crash):
        run_report(crashing, fixture_pdf("repeated_image.pdf"), settings, "inbox", "2026-10")
    now, policy = utc_now(), settings.retention
    assert len(keys(store, "index/archive")) == 1 and keys(store, "archive")
    sweep = janitor.run(store, settings.work_root, late(settings, now), policy)
    assert [e.kind for e in sweep.deletions] == ["working_material"]  # unfinished: short clock
    assert keys(store, "archive") == [] and keys(store, "staged") == []
    expired = now + timedelta(days=policy.archive_days + 1)
    again = janitor.run(store, settings.work_root, expired, policy)
    assert again.deletions == [] and keys(store, "index/archive") == []  # already gone: done
    assert all(o.passed for o in checks(store, settings, expired).values())


def test_material_no_marker_covers_is_reported_and_deleted_with_an_audit_event(store, settings):
    store.put_bytes("staged/inbox-2026-10/rev1.pdf", b"%PDF" + b"x" * 996)
    store.put_bytes(f"work/rev1/page_0001/{'a' * 64}.png", b"y" * 500)
    now, policy = utc_now(), settings.retention
    assert all(o.passed for o in checks(store, settings, late(settings, now, 9)).values())
    early = janitor.run(store, settings.work_root, now + policy.unfinished_hold - MIN, policy)
    assert early.deletions == [] and len(keys(store, "work")) == 1  # in lease + short clock
    failing = checks(store, settings, late(settings, now))[WORK_CHECK]
    assert not failing.passed
    assert (failing.metadata["untracked_items"], failing.metadata["untracked_bytes"],
            failing.metadata["overdue_bytes"]) == (2, 1500, 1500)  # fmt: skip
    sweep = janitor.run(store, settings.work_root, late(settings, now), policy)
    found = sorted((e.kind, e.report_id, e.revision, e.bytes) for e in sweep.deletions)
    assert found == [("untracked_staged", "inbox-2026-10", "rev1", 1000),
                     ("untracked_work", "inbox-2026-10", "rev1", 500)]  # fmt: skip
    assert all(e.lag_seconds == pytest.approx(660, abs=60) for e in sweep.deletions)
    assert keys(store, "staged") == [] and keys(store, "work") == []
    logged = {e.kind for e in deletion_log.read(store, now - timedelta(days=1))}
    assert logged == {"untracked_staged", "untracked_work"}
    assert all(o.passed for o in checks(store, settings, late(settings, now)).values())


def test_old_untracked_material_of_a_revision_written_to_just_now_is_kept(tmp_path, settings):
    store, now = LocalStore(tmp_path / "local"), utc_now()
    store.put_bytes("staged/inbox-2026-10/rev2.pdf", b"%PDF-old")
    store.put_bytes("work/rev2/page_0001/outcomes.json", b"[]")  # written now, by a run
    old = (now - settings.retention.unfinished_hold - 30 * MIN).timestamp()
    os.utime(store.root / "staged/inbox-2026-10/rev2.pdf", (old, old))
    assert janitor.run(store, settings.work_root, now, settings.retention).deletions == []
    assert checks(store, settings, now + 10 * MIN)[WORK_CHECK].passed
    sweep = janitor.run(store, settings.work_root, late(settings, now), settings.retention)
    assert sorted(e.kind for e in sweep.deletions) == ["untracked_staged", "untracked_work"]


def test_a_workdir_that_crashed_before_its_lease_file_is_still_removed(tmp_path, settings):
    store, now = LocalStore(tmp_path / "local"), utc_now()
    workdir = create_workdir(settings.work_root, lease_for(settings, "r/s"))
    (workdir / LEASE_FILE).unlink()  # as if the process died between mkdir and the lease
    (workdir / "page.bin").write_bytes(b"z" * 100)
    assert janitor.run(store, settings.work_root, now, settings.retention).deletions == []
    after = now + settings.retention.unfinished_hold + 2 * 60 * MIN  # its hour bucket is over
    assert not checks(store, settings, after)[WORK_CHECK].passed
    (event,) = janitor.run(store, settings.work_root, after, settings.retention).deletions
    assert event.kind == "workdir" and not workdir.exists()


def images(store, prefix="archive"):
    return [k for k in keys(store, prefix) if "/images/" in k]


def image_write(method, key):
    return method == "put_if_absent" and "/images/" in key


def test_images_written_before_a_crash_mid_extraction_go_on_the_short_clock(store, settings):
    """Extraction writes validated images straight to their archive keys, after the task's work
    marker: a revision that never publishes its manifest loses them with its other working
    material, on the short clock, never the long one."""
    staged, (task,) = stage(
        store, fixture_pdf("repeated_image.pdf"), "inbox", "2026-10", 0, settings, "r/s"
    )
    with pytest.raises(Crash):
        extract(CrashingStore(store, image_write, after=True), task, settings, "r/extract")
    now, policy = utc_now(), settings.retention
    assert images(store) and not store.exists(staged.ref.manifest_key)
    assert keys(store, "index/work") and keys(store, "index/archive") == []  # a minute each
    assert janitor.run(store, settings.work_root, now, policy).deletions == []  # in lease
    assert all(o.passed for o in checks(store, settings, now).values())
    failing = checks(store, settings, late(settings, now))[WORK_CHECK]
    written = sum(o.size for o in store.list("archive") if "/images/" in o.key)
    assert not failing.passed and failing.metadata["overdue_bytes"] > written > 0
    sweep = janitor.run(store, settings.work_root, late(settings, now), policy)
    assert [e.kind for e in sweep.deletions] == ["working_material"]  # through its markers
    assert keys(store, "archive") == [] and keys(store, "staged") == []
    assert all(o.passed for o in checks(store, settings, late(settings, now)).values())


def test_unpublished_archive_objects_no_marker_covers_go_with_their_staged_source(store, settings):
    """The listing safety net: a revision found in `staged/` (its key names the report) takes
    along what it holds in the archive with no published manifest; a published revision's
    archive is never touched."""
    published = run_report(store, fixture_pdf("repeated_image.pdf"), settings, "inbox", "2026-10")
    kept = keys(store, f"archive/{published.report_id}/{published.parent_revision}")
    store.put_bytes("staged/inbox-2026-10/rev3.pdf", b"%PDF" + b"x" * 996)
    store.put_bytes("work/rev3/page_0001/outcomes.json", b"[]")
    store.put_bytes(f"archive/inbox-2026-10/rev3/images/{'b' * 64}.png", b"y" * 400)
    now, policy = utc_now(), settings.retention
    plan = json.dumps({"expected": {"1": 1}, "queued_at": iso(now), "tasks": []}).encode()
    store.put_bytes("archive/inbox-2026-10/rev3/plan.json", plan)
    assert janitor.run(store, settings.work_root, now, policy).deletions == []
    failing = checks(store, settings, late(settings, now))[WORK_CHECK]
    assert (failing.metadata["untracked_items"], failing.metadata["untracked_bytes"]) == (
        3, 1000 + 2 + 400 + len(plan),
    )  # fmt: skip
    for o in store.list("index/work"):  # the published run's markers: not what this is about
        store.delete(o.key)
    sweep = janitor.run(store, settings.work_root, late(settings, now), policy)
    found = [(e.kind, e.revision, e.objects) for e in sweep.deletions]
    assert found == [
        ("untracked_archive", "rev3", 2),
        ("untracked_work", "rev3", 1),
        ("untracked_staged", "rev3", 1),
    ]  # fmt: skip: the staged source last
    assert keys(store, "archive/inbox-2026-10/rev3") == [] and keys(store, "staged") == []
    assert sorted(keys(store, "archive")) == sorted(kept)
    assert all(o.passed for o in checks(store, settings, late(settings, now)).values())


def test_a_rerun_of_an_expired_revision_that_never_publishes_leaves_only_the_tombstone(
    store, settings
):
    """Under an expired revision's tombstone, anything else in its archive is a later rerun's
    unpublished material: the short clock takes it, the tombstone stays."""
    pdf, policy = fixture_pdf("repeated_image.pdf"), settings.retention
    first = run_report(store, pdf, settings, "inbox", "2026-10")
    prefix = f"archive/{first.report_id}/{first.parent_revision}"
    expiry = janitor.run(store, settings.work_root, utc_now() + timedelta(days=401), policy)
    assert "archive" in {e.kind for e in expiry.deletions}
    assert keys(store, prefix) == [f"{prefix}/manifest.json"]
    _, (task,) = stage(store, pdf, "inbox", "2026-10", 0, settings, "rerun")  # then it dies
    with pytest.raises(Crash):
        extract(CrashingStore(store, lambda m, k: k.endswith("outcomes.json")), task, settings, "r")
    now = utc_now()
    assert len(images(store, prefix)) == 2 and len(keys(store, prefix)) == 4  # + plan, tombstone
    assert not checks(store, settings, late(settings, now))[WORK_CHECK].passed
    sweep = janitor.run(store, settings.work_root, late(settings, now), policy)
    assert [e.kind for e in sweep.deletions] == ["working_material"]
    assert keys(store, prefix) == [f"{prefix}/manifest.json"]
    assert store_json.read_manifest(store, f"{prefix}/manifest.json").state == "expired"
    assert all(o.passed for o in checks(store, settings, late(settings, now)).values())

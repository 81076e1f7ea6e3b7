"""Deadline markers come before the material they cover: a crash between the two leaves a marker
with nothing behind it, which counts as done. Crashes are injected at the storage boundary; the
clock is injected (no sleeps)."""

from datetime import timedelta

import pytest

from report_pipeline.core import janitor, retention_audit
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.retention import utc_now
from report_pipeline.core.storage import LocalStore
from report_pipeline.core.workdir import LEASE_FILE, create_workdir
from report_pipeline.core.worker import lease_for, stage
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.faults import Crash, CrashingStore

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
    assert not checks(store, settings, late(settings, now))[WORK_CHECK].passed
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

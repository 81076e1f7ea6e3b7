"""Two clocks, the janitor and the retention checks, with an injected clock (no sleeps)."""

import json
import os
import signal
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from report_pipeline.core.checks import retention_audit
from report_pipeline.core.model import store_json
from report_pipeline.core.model.clock import parse_iso, utc_now
from report_pipeline.core.model.store_json import read_manifest
from report_pipeline.core.retention import deletion_log, janitor
from report_pipeline.core.scratch.workdir import (
    create_workdir,
    held_by_live_process,
    lease_for,
    new_lease,
    private_workdir,
    read_lease,
)
from report_pipeline.core.steps import stage
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow

MIN = timedelta(minutes=1)


@pytest.fixture
def store(any_store):
    """Every test here runs on LocalStore and on S3Store (moto's S3 server on loopback)."""
    return any_store


def checks(store, settings, now):
    outcomes = retention_audit.audit_all(store, settings.work_root, now, settings.retention)
    return {o.name: o for o in outcomes}


_NEVER_EXITED = []  # holding the context keeps its `finally` from running (as in a dead process)


def crashed_workdir(settings, owner="run/step"):
    """A worker that died without its `finally`: the directory and lease stay behind."""
    policy = settings.retention  # a lease without a holder (this process lives on): the clock
    lease = new_lease(owner, utc_now(), policy.lease_minutes, policy.work_minutes)
    context = private_workdir(settings.work_root, lease)
    workdir = context.__enter__()
    _NEVER_EXITED.append(context)
    (workdir / "page.bin").write_bytes(b"x" * 1000)
    return workdir


def test_nothing_is_deleted_before_its_deadline(run_fixture, store, settings):
    run_fixture("repeated_image.pdf")
    sweep = janitor.run(store, settings.work_root, utc_now(), settings.retention)
    assert sweep.deletions == [] and sweep.buckets_opened <= 1
    assert all(o.passed for o in checks(store, settings, utc_now()).values())


def test_gate4_expired_temporary_directory_disappears_on_next_janitor_pass(store, settings):
    workdir, now = crashed_workdir(settings), utc_now()
    lease = settings.retention.lease_minutes
    janitor.run(store, settings.work_root, now + (lease - 1) * MIN, settings.retention)
    assert workdir.exists()  # the lease is live: never touched
    overdue = checks(store, settings, now + (lease + 11) * MIN)
    assert not overdue["work_material_deleted_by_deadline"].passed
    assert overdue["work_material_deleted_by_deadline"].metadata["overdue_bytes"] >= 1000
    sweep = janitor.run(store, settings.work_root, now + (lease + 11) * MIN, settings.retention)
    assert not workdir.exists()
    (event,) = sweep.deletions
    assert (event.kind, event.item) == ("workdir", workdir.name) and event.bytes >= 1000
    assert event.lag_seconds >= 600 and workdir.name in json.dumps(audit_events(store))
    assert checks(store, settings, now + (lease + 11) * MIN)[
        "work_material_deleted_by_deadline"
    ].passed


def audit_events(store):
    return [e.__dict__ for e in deletion_log.read(store, utc_now() - timedelta(days=1))]


def test_unfinished_revision_fails_three_checks_until_the_janitor_removes_it(store, settings):
    staged, tasks = stage(
        store, fixture_pdf("truncated_jpeg.pdf"), "inbox", "2026-10", 0, settings, "crashed"
    )  # the run died after staging: no extraction, no manifest
    policy, now = settings.retention, utc_now()
    late = now + (policy.lease_minutes + policy.work_minutes + 11) * MIN
    assert all(o.passed for o in checks(store, settings, now).values())  # still in progress
    failing = checks(store, settings, late)
    assert not failing["work_material_deleted_by_deadline"].passed
    assert not failing["manifest_complete"].passed
    assert failing["manifest_complete"].metadata["first_incomplete"] == staged.ref.revision
    assert failing["archive_matches_manifest"].metadata["orphan_objects"] == 1  # plan.json
    sweep = janitor.run(store, settings.work_root, late, settings.retention)
    assert [e.kind for e in sweep.deletions] == ["working_material"]
    assert not store.exists(staged.ref.staged_key)
    assert all(o.passed for o in checks(store, settings, late).values())


def test_archive_expires_into_a_tombstone_on_the_long_clock(run_fixture, store, settings):
    manifest = run_fixture("repeated_image.pdf")
    expires = parse_iso(manifest.deadlines.archive_delete_by)
    later = expires + 11 * MIN
    failing = checks(store, settings, later)["archive_within_retention"]
    assert not failing.passed and failing.metadata["overdue_bytes"] > 0
    sweep = janitor.run(store, settings.work_root, later, settings.retention)
    (event,) = [e for e in sweep.deletions if e.kind == "archive"]
    assert event.objects > 2 and event.lag_seconds == pytest.approx(660, abs=60)
    prefix = f"archive/{manifest.report_id}/{manifest.parent_revision}"
    assert [o.key for o in store.list(prefix)] == [f"{prefix}/manifest.json"]
    tomb = read_manifest(store, f"{prefix}/manifest.json")
    assert tomb.state == "expired" and {c.state for c in tomb.children} == {"expired"}
    assert tomb.deleted.bytes == event.bytes and tomb.deadlines == manifest.deadlines
    assert all(o.passed for o in checks(store, settings, later).values())
    again = janitor.run(store, settings.work_root, later + MIN, settings.retention)
    assert again.deletions == []  # idempotent: already gone is done


def test_a_rerun_under_the_same_key_is_never_swept_from_under_it(store, settings):
    pdf, policy = fixture_pdf("no_images.pdf"), settings.retention
    stage(store, pdf, "inbox", "2026-10", 0, settings, "first")
    now = utc_now()
    due = now + (policy.lease_minutes + policy.work_minutes + 1) * MIN
    # the entry is due, but the material was written just now (as a rerun would): keep it
    sweep = janitor.run(store, settings.work_root, now + (policy.work_minutes + 1) * MIN, policy)
    assert sweep.deletions == []
    assert janitor.run(store, settings.work_root, due, policy).deletions


def test_archive_matches_manifest_finds_missing_tampered_and_orphan_objects(
    run_fixture, store, settings
):
    manifest = run_fixture("truncated_jpeg.pdf")
    archived = next(c for c in manifest.children if c.state == "archived")
    quarantined = next(c for c in manifest.children if c.state == "quarantined")
    store.put_bytes(archived.object_key, b"tampered")
    store.delete(quarantined.object_key)
    prefix = f"archive/{manifest.report_id}/{manifest.parent_revision}"
    store.put_bytes(f"{prefix}/images/{'0' * 64}.png", b"stray")
    outcome = checks(store, settings, utc_now())["archive_matches_manifest"]
    assert not outcome.passed
    assert (outcome.metadata["hash_mismatches"], outcome.metadata["missing_objects"],
            outcome.metadata["orphan_objects"]) == (1, 1, 1)  # fmt: skip


def test_archive_check_reads_no_s3_object_whose_listing_matches_the_upload(
    run_fixture, store, settings
):
    """S3: the listed ETag and size against the MD5 and size recorded at upload, no GET per
    object; locally (and for any object whose listing disagrees) the bytes are hashed again."""
    manifest = run_fixture("repeated_image.pdf")
    objects = {c.object_key for c in manifest.children if c.object_key}
    assert objects and all(c.md5 for c in manifest.children if c.object_key)
    reads = []
    if isinstance(store, S3Store):
        store.client.meta.events.register(
            "before-call.s3.GetObject", lambda params, **_: reads.append(params["url_path"])
        )
    outcome = checks(store, settings, utc_now())["archive_matches_manifest"]
    assert outcome.passed and outcome.metadata["objects_verified"] == len(objects)
    listing, rehashed = (len(objects), 0) if isinstance(store, S3Store) else (0, len(objects))
    assert (outcome.metadata["objects_matched_by_listing"],
            outcome.metadata["objects_rehashed"]) == (listing, rehashed)  # fmt: skip
    assert not [key for key in reads if "/images/" in key or "/quarantine/" in key]
    assert "sha256" in outcome.metadata["compared"] or isinstance(store, S3Store)


def test_a_recorded_md5_that_disagrees_is_settled_by_the_bytes(run_fixture, store, settings):
    """A wrong MD5 in the manifest (or an ETag that is not the MD5) neither passes nor fails the
    check by itself: the object is read back and its sha256 decides."""
    manifest = run_fixture("repeated_image.pdf")
    prefix = f"archive/{manifest.report_id}/{manifest.parent_revision}"
    children = tuple(replace(c, md5="0" * 32 if c.object_key else None) for c in manifest.children)
    wrong = replace(manifest, children=children)
    store_json.write_manifest(store, f"{prefix}/manifest.json", wrong)
    outcome = checks(store, settings, utc_now())["archive_matches_manifest"]
    assert outcome.passed and outcome.metadata["objects_matched_by_listing"] == 0
    assert outcome.metadata["objects_rehashed"] == outcome.metadata["objects_verified"] > 0


def test_audit_events_carry_no_bytes_or_paths(run_fixture, store, settings, tmp_path):
    run_fixture("truncated_jpeg.pdf")  # publishing deletes the staged source: one event
    (event,) = audit_events(store)
    assert event["kind"] == "working_material" and event["lag_seconds"] < 0
    assert set(event) == {"kind", "item", "report_id", "revision", "deadline", "deleted_at",
                          "lag_seconds", "bytes", "objects"}  # fmt: skip
    assert str(tmp_path) not in json.dumps(event)


def test_every_check_reports_counts_bytes_an_oldest_item_and_cleanup_lag(
    run_fixture, store, settings
):
    run_fixture("truncated_jpeg.pdf")
    for outcome in checks(store, settings, utc_now()).values():
        keys = set(outcome.metadata)
        assert {"cleanup_lag_p50_seconds", "cleanup_lag_p95_seconds", "deletions_audited"} <= keys
        assert any("bytes" in k for k in keys), outcome.name
        assert any(k.startswith(("oldest_overdue", "first_")) for k in keys), outcome.name
        assert outcome.metadata["deletions_audited"] == 1  # publishing deleted the staged source


def _workdir_of_a_killed_worker(settings) -> Path:
    """A real worker process takes its workdir (lease_for: it is the holder) and is SIGKILLed."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker
        workdir = create_workdir(settings.work_root, lease_for(settings, "killed/step"))
        os.write(write, str(workdir).encode())
        time.sleep(60)
        os._exit(0)
    workdir = Path(os.read(read, 4096).decode())
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return workdir


def test_a_workdir_whose_holder_still_runs_is_kept_whatever_the_clock_says(store, settings):
    # A step that outlives its lease, or a host clock stepped forward past it: the lease's times
    # say due, the kernel says its holder runs. Only the dead worker's directory goes.
    live = create_workdir(settings.work_root, lease_for(settings, "live/step"))
    dead = _workdir_of_a_killed_worker(settings)
    assert held_by_live_process(read_lease(live))
    assert not held_by_live_process(read_lease(dead))
    later = utc_now() + settings.retention.unfinished_hold + 2 * 60 * MIN
    sweep = janitor.run(store, settings.work_root, later, settings.retention)
    assert [e.item for e in sweep.deletions if e.kind == "workdir"] == [dead.name]
    assert live.exists() and not dead.exists()
    audit = checks(store, settings, later)["work_material_deleted_by_deadline"]
    assert audit.passed  # the audit agrees: nothing overdue
    foreign = replace(read_lease(live), holder="another-boot/pid:[1]/1/1")
    assert not held_by_live_process(foreign)  # another host or boot: only the clock decides

"""Issue 33, case 6: the clock steps an hour backward and forward around janitor passes.

The janitor is the project's: `cleanup_job` (the `image_archive` asset, one pass, then its
whole-archive checks) executed in this process with the clock resource's `fixed` time, and the
host janitor (`python -m report_pipeline.host_janitor`) in a process of its own whose clock
`faketime` steps. Around the passes, a real report run is in flight: the core pipeline in its
own process, held by the fault layer as its extraction step fetches the staged report into its
workdir (devstack/faults.py): the workdir open under its lease, the staged source and plan in
the store, no decoder running (a held decoder would hit its time budget); then let go. Every
"now" is the `clock` fixture's or a deadline the store recorded, never a date.

After each pass: nothing whose recorded deadline is later than the pass's clock is gone, a step
back deletes nothing, a step forward deletes exactly what is due at the stepped clock, every
deletion has its audit event (deadline at or before the deletion), recorded deadlines and
manifests are unchanged, and the janitor's own checks pass. The run in flight then publishes a
complete manifest that its archive matches."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.retention import deletion_log
from report_pipeline.core.scratch.workdir import new_lease, private_workdir, read_lease
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.retention.checks import archive_retention_checks
from report_pipeline.defs.retention.image_archive import image_archive
from report_pipeline.defs.retention.jobs import cleanup_job
from report_pipeline_tests import held_run
from report_pipeline_tests.clock import faketime_env, forget_faketime
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.held_run import assert_archive_matches, listing

pytestmark = pytest.mark.live

HOUR, MIN, MS = timedelta(hours=1), timedelta(minutes=1), timedelta(milliseconds=1)
REPORT, IN_FLIGHT = "repeated_image.pdf", "monthly_report.pdf"
AT_EXTRACTION = "pause=staged/*,pause_method=fetch"  # extraction fetches the staged report
_NEVER_EXITED = []  # a killed worker's workdir: its `finally` never runs


@pytest.fixture
def janitor_pass(instance, resources):
    """One janitor pass as the schedule runs it (cleanup_job), with the clock resource fixed at
    `at`: what it deleted, and its checks' verdicts on what it left."""

    def run(at) -> tuple[dict, dict[str, bool]]:
        local = dg.Definitions(
            assets=[image_archive], asset_checks=[archive_retention_checks], jobs=[cleanup_job],
            resources={**resources, "clock": ClockResource(fixed=iso(at))},
        )  # fmt: skip
        result = local.resolve_job_def("cleanup_job").execute_in_process(instance=instance)
        (done,) = result.get_asset_materialization_events()
        figures = {k: v.value for k, v in done.materialization.metadata.items()}
        checks = {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}
        return figures, checks

    return run


def dead_workdir(work_root: Path, started) -> Path:
    """The workdir of a worker killed mid-step that started at `started`: it stays behind."""
    context = private_workdir(work_root, new_lease("dead/step", started, 60, 15))
    workdir = context.__enter__()
    _NEVER_EXITED.append(context)
    (workdir / "page.bin").write_bytes(b"x" * 1000)
    return workdir


def in_flight(store: LocalStore, settings: PipelineSettings, tmp_path: Path, month: str):
    """A real run of IN_FLIGHT held as extraction begins: its process and signal file."""
    signal_file = tmp_path / "held.json"
    faults = f"{AT_EXTRACTION},signal={signal_file}"
    run = held_run.start(store, settings.work_root, fixture_pdf(IN_FLIGHT), month, faults)
    held_run.held_at(run, signal_file)
    return run, signal_file


def test_an_hour_back_and_forward_deletes_only_what_is_due(janitor_pass, tmp_path, clock, settings):
    store = LocalStore(tmp_path / "store")  # the `resources` fixture's store and work root
    now = clock.now
    done = run_report(store, fixture_pdf(REPORT), settings, "inbox", clock.month(-2))
    dead = dead_workdir(settings.work_root, now - 40 * MIN)  # lease over at now + 20 min
    run, signal_file = in_flight(store, settings, tmp_path, clock.month(-1))
    try:
        (live,) = [w for w in settings.work_root.rglob("w-*") if w != dead]
        live_lease = read_lease(live)
        assert parse_iso(live_lease.lease_until) > now + HOUR  # it began after `now`
        # Everything in the store (but the audit stream, which grows): the archive, the deadline
        # markers, and the run's staged source, draws and plan, which it is still to use.
        stored = {k: v for k, v in listing(store).items() if not k.startswith("audit/")}
        assert listing(store, "staged/") and listing(store, "index/work/")
        published = deletion_log.read(store, now - 2 * HOUR)  # the working material, at publish

        deleted, took = [], []
        for step, at in (("none", now), ("back", now - HOUR), ("forward", now + HOUR),
                         ("back again", now)):  # fmt: skip
            started = time.monotonic()
            figures, checks = janitor_pass(at)
            took.append(time.monotonic() - started)
            deleted.append((step, figures["deleted_items"], figures["deleted_workdir"]))
            assert all(checks.values()), (step, checks)  # the pass's own audit stays green
            assert live.exists() and read_lease(live) == live_lease, step  # the run's, untouched
            kept = listing(store)
            assert {k: kept.get(k) for k in stored} == stored, step  # none gone, none rewritten
        # Only the step forward deletes, and only the killed worker's workdir: due at now + 20.
        assert deleted == [("none", 0, 0), ("back", 0, 0), ("forward", 1, 1), ("back again", 0, 0)]
        assert not dead.exists()
        events = [e for e in deletion_log.read(store, now - 2 * HOUR) if e not in published]
        assert [(e.kind, e.item) for e in events] == [("workdir", dead.name)]  # one, not two
        (event,) = events
        assert abs(parse_iso(event.deadline) - (now + 20 * MIN)) < MS  # its lease's end
        assert abs(parse_iso(event.deleted_at) - (now + HOUR)) < MS  # the stepped clock's
        assert event.lag_seconds == pytest.approx(40 * 60, abs=0.01)
    finally:
        let_go = time.monotonic()
        line = held_run.finish(run, signal_file)
    published = time.monotonic() - let_go
    # The run held through all four passes publishes a complete manifest its archive matches.
    state, key = line.split()[1:]
    manifest = store_json.read_manifest(store, key)
    assert state == "complete" and manifest.counts.pages_unaccounted == 0
    assert_archive_matches(store, manifest)
    assert store_json.read_manifest(store, keys.manifest_key(done.report_id, done.parent_revision))
    # The next pass at the true clock past every short deadline finds nothing left to delete.
    late = now + settings.retention.unfinished_hold + 11 * MIN
    figures, checks = janitor_pass(late)
    assert figures["deleted_items"] == 0 and all(checks.values()), checks
    assert listing(store, "index/work/") == {} and listing(store, "staged/") == {}
    print(f"case 6: passes {', '.join(f'{t:.2f}' for t in took)} s; the held run published "
          f"{published:.2f} s after it was let go")  # fmt: skip


def published_later(store: LocalStore, settings: PipelineSettings, month: str, shift: str):
    """A real run of REPORT in a process whose clock is `shift` (faketime) off this one's: a
    month published that much later (or at that moment, `@...`), its deadlines with it."""
    run = held_run.start(store, settings.work_root, fixture_pdf(REPORT), month, shift=shift)
    out, _ = run.communicate(timeout=180)
    assert run.returncode == 0, out
    state, key = out.strip().splitlines()[-1].split()[1:]
    assert state == "complete"
    return store_json.read_manifest(store, key), key


def test_the_long_clock_steps_an_hour_and_expires_each_revision_at_its_own_deadline(
    janitor_pass, tmp_path, clock, settings
):
    store = LocalStore(tmp_path / "store")
    first = run_report(store, fixture_pdf(REPORT), settings, "inbox", clock.month(-3))
    first_key = keys.manifest_key(first.report_id, first.parent_revision)
    second, second_key = published_later(store, settings, clock.month(-2), "+90m")
    d1 = parse_iso(first.deadlines.archive_delete_by)
    d2 = parse_iso(second.deadlines.archive_delete_by)
    assert d1 + 90 * MIN < d2 < d1 + 95 * MIN
    steps = [("before", d1 - 30 * MIN, 0), ("back", d1 - 90 * MIN, 0),
             ("forward", d1 + 30 * MIN, 1), ("back again", d1 - 30 * MIN, 0),
             ("just before the second", d2 - MIN, 0), ("at the second", d2, 1)]  # fmt: skip
    expired_at = {}
    for step, at, expected in steps:
        before = store_json.read_manifest(store, second_key)
        figures, checks = janitor_pass(at)
        assert (step, figures["deleted_items"], figures["deleted_archive"]) == (
            step, expected, expected
        )  # fmt: skip
        assert all(checks.values()), (step, checks)
        for key, deadline in ((first_key, d1), (second_key, d2)):
            manifest = store_json.read_manifest(store, key)
            if manifest.state == "expired":
                expired_at.setdefault(key, at)
                assert deadline <= parse_iso(manifest.expired_at)  # never before its deadline
        if step != "at the second":
            assert store_json.read_manifest(store, second_key) == before  # untouched till due
    assert expired_at == {first_key: d1 + 30 * MIN, second_key: d2}
    for key, original in ((first_key, first), (second_key, second)):
        tomb = store_json.read_manifest(store, key)
        assert tomb.deadlines == original.deadlines  # a tombstone keeps the deadlines it had
        prefix = keys.archive_prefix(original.report_id, original.parent_revision)
        assert list(listing(store, f"{prefix}/")) == [key]  # all gone but the tombstone
    events = [e for e in deletion_log.read(store, d1 - 2 * HOUR) if e.kind == "archive"]
    assert sorted(e.revision for e in events) == sorted(
        [first.parent_revision, second.parent_revision]
    )  # one audit event each, however often the clock went back and forth
    assert all(e.lag_seconds >= 0 and parse_iso(e.deadline) <= parse_iso(e.deleted_at)
               for e in events)  # fmt: skip
    assert listing(store, "index/archive/") == {}


class EarlyExpiry(Exception):
    """A revision expired before the `archive_delete_by` its manifest states."""


def test_no_revision_expires_before_the_second_its_manifest_states(
    janitor_pass, tmp_path, clock, settings
):
    store = LocalStore(tmp_path / "store")
    # Published just after hh:mm:05 by its process's clock (faketime): the deadline is mid-minute.
    start = clock.now.replace(second=5, microsecond=0) + 10 * MIN
    manifest, key = published_later(store, settings, clock.month(-2), f"@{start:%Y-%m-%d %H:%M:%S}")
    deadline = parse_iso(manifest.deadlines.archive_delete_by)
    assert 5 <= deadline.second < 59
    figures, _ = janitor_pass(deadline - (deadline.second - 1) * timedelta(seconds=1))
    assert store_json.read_manifest(store, key).deadlines == manifest.deadlines
    if figures["deleted_items"]:
        raise EarlyExpiry(f"deadline {manifest.deadlines.archive_delete_by}, expired at "
                          f"{store_json.read_manifest(store, key).expired_at}")  # fmt: skip


def host_janitor(tmp_path: Path, shift: str) -> str:
    """One pass of the host janitor in its own process, its clock `shift` off (faketime)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORT_PIPELINE_")}
    env.update(REPORT_PIPELINE_STORE=str(tmp_path / "store"),
               REPORT_PIPELINE_WORK=str(tmp_path / "work"), **faketime_env(shift))  # fmt: skip
    janitor = subprocess.Popen(
        [sys.executable, "-m", "report_pipeline.host_janitor", "--once"], cwd=held_run.REPO,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = janitor.communicate(timeout=120)
    forget_faketime(janitor.pid)
    assert janitor.returncode == 0, err[-2000:]
    return out.strip()


def test_a_janitor_process_stepped_an_hour_keeps_a_run_in_flight(tmp_path, clock, settings):
    # The live step's lease is over by the stepped clock; its holder (the run's process) still
    # runs, and the kernel says so: only the dead worker's directory goes.
    store = LocalStore(tmp_path / "store")
    dead = dead_workdir(settings.work_root, clock.now - 40 * MIN)  # due at now + 20 min
    run, signal_file = in_flight(store, settings, tmp_path, clock.month(-1))
    try:
        (live,) = [w for w in settings.work_root.rglob("w-*") if w != dead]
        assert host_janitor(tmp_path, "-1h") == "host janitor: deleted 0 workdirs, 0 bytes"
        assert live.exists() and dead.exists()
        forward = host_janitor(tmp_path, "+1h")  # the killed worker's lease is over then
        assert forward.startswith("host janitor: deleted 1 workdir,") and not dead.exists()
        assert live.exists()
        host_janitor(tmp_path, "+61m")  # the live step's own lease is over by this clock
        assert live.exists()
    finally:
        let_go = time.monotonic()
        status, line = held_run.let_go(run, signal_file)
    ended = time.monotonic() - let_go
    print(f"case 6: the live workdir kept; the run ended {status} {ended:.2f} s after it was "
          f"let go")  # fmt: skip
    swept = [e for e in deletion_log.read(store, clock.now - 2 * HOUR) if e.kind == "workdir"]
    assert [e.item for e in swept] == [dead.name]  # the run's own clean-up is not the janitor's
    assert parse_iso(swept[0].deadline) <= parse_iso(swept[0].deleted_at)
    assert status == 0 and line.startswith("published complete ")
    manifest = store_json.read_manifest(store, line.split()[-1])
    assert_archive_matches(store, manifest)

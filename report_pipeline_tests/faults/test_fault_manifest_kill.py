"""Issue 33, case 7: a run is killed while it writes its manifest, between the objects and the
manifest. A real run (the core pipeline in a process of its own, or `dagster asset materialize`
on the test code location, healed by `dead_run_sensor`'s replacement run) is held by the fault
layer at the moment its manifest write begins (`pause=archive/*/manifest.json`,
devstack/faults.py) and SIGKILLed there. Then: the next run publishes exactly
one manifest over the objects already archived (none written twice), the janitor deletes
nothing before the leftovers' lease + short clock is over and then only what no manifest
references, each deletion with an audit event; the deadlines are the manifest's.

No sleeps: the janitor's clock is injected, relative to the `clock` fixture's now."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from devstack.faults import FAULTS_ENV
from report_pipeline.core.checks import retention_audit
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import parse_iso
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.retention import deletion_log, janitor
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import Store
from report_pipeline_tests import held_run
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.held_run import assert_archive_matches, listing

pytestmark = pytest.mark.live

REPORT, NEW_REPORT = "image_paths.pdf", "repeated_image.pdf"
MONTH = "2026-10"
MIN = timedelta(minutes=1)
AT_MANIFEST = "archive/*/manifest.json"


@pytest.fixture
def store(any_store: Store) -> Store:
    """LocalStore and S3Store (moto's S3 server on loopback; the run's process reaches it too)."""
    return any_store


def killed_at_manifest(store: Store, settings: PipelineSettings, tmp_path: Path, shift=""):
    """A real run of REPORT held as its manifest write begins, then SIGKILLed: the manifest key
    it was writing and when it died (monotonic)."""
    signal_file = tmp_path / "held.json"
    faults = f"pause={AT_MANIFEST},signal={signal_file}"
    run = held_run.start(store, settings.work_root, fixture_pdf(REPORT), MONTH, faults, shift)
    try:
        held = held_run.held_at(run, signal_file)
    finally:
        killed = held_run.kill(run)
    assert held["method"] == "put_bytes" and held_run.gone(held["pid"])
    return held["key"], killed


def manifests(store: Store) -> list[str]:
    return [k for k in listing(store, f"{keys.ARCHIVE}/") if k.endswith(f"/{keys.MANIFEST}")]


def audit(store: Store, settings: PipelineSettings, now) -> dict[str, bool]:
    outcomes = retention_audit.audit_all(store, settings.work_root, now, settings.retention)
    return {o.name: o.passed for o in outcomes}


def archive_markers(store: Store, revision: str) -> list[str]:
    return [k for k in listing(store, f"{keys.ARCHIVE_INDEX}/") if k.endswith(f"-{revision}")]


def test_the_next_run_publishes_one_manifest_over_what_the_killed_run_archived(
    store, settings, tmp_path, clock
):
    key, killed = killed_at_manifest(store, settings, tmp_path)
    parsed = keys.parse_archive_key(key)
    report_id, revision = parsed.report_id, parsed.revision
    # Nothing under the manifest's key, no partial write of it: nothing reads "complete".
    assert manifests(store) == [] and store_json.read_manifest(store, key) is None
    before = listing(store)
    prefix = keys.archive_prefix(report_id, revision)
    archived = {k: m for k, m in before.items() if k.startswith(f"{prefix}/{keys.IMAGES}/")}
    assert archived and keys.plan_key(report_id, revision) in before
    assert archive_markers(store, revision), "the long clock's marker comes before the manifest"
    # Under its lease an unfinished revision may be a run in flight: no check flags it yet.
    assert all(audit(store, settings, clock.now).values())

    # Before the leftovers' lease + short clock is over, a janitor pass (at any clock up to then)
    # deletes nothing: a retry may still be using them.
    hold = settings.retention.unfinished_hold
    for at in (clock.now, clock.now + hold - MIN):
        assert janitor.run(store, settings.work_root, at, settings.retention).deletions == []
    assert set(before) <= set(listing(store))

    manifest = run_report(store, fixture_pdf(REPORT), settings, "inbox", MONTH)  # the next run
    recovered = time.monotonic() - killed
    assert manifests(store) == [key] and manifest.state == "complete"
    assert manifest.counts.pages_unaccounted == 0
    assert store_json.read_manifest(store, key) == manifest
    referenced = assert_archive_matches(store, manifest)
    after = listing(store)
    # No object archived twice: every image the killed run wrote is the one the manifest names,
    # untouched (same modification time); the next run created none of them again.
    assert {k: after[k] for k in archived} == archived
    assert {k for k in referenced if "/images/" in k} == set(archived)
    assert listing(store, f"{keys.STAGED}/") == {} and listing(store, f"{keys.WORK}/") == {}
    # Publishing deleted the working material, with an audit event for it.
    events = deletion_log.read(store, clock.now - timedelta(days=1))
    assert [(e.kind, e.revision) for e in events] == [("working_material", revision)]

    late = clock.now + hold + 11 * MIN  # past the killed run's lease + short clock, and grace
    sweep = janitor.run(store, settings.work_root, late, settings.retention)
    assert sweep.deletions == []  # nothing was left unreferenced
    assert listing(store, f"{keys.WORK_INDEX}/") == {}  # no marker left past the pass
    assert all(audit(store, settings, late).values()), audit(store, settings, late)
    kept = set(listing(store, f"{prefix}/"))
    assert referenced <= kept and store_json.read_manifest(store, key).state == "complete"
    print(f"case 7 (core, {type(store).__name__}): kill -> next run published {recovered:.2f} s")


def test_a_killed_revisions_leftovers_go_after_their_lease_and_nothing_else(
    store, settings, tmp_path, clock
):
    key, _ = killed_at_manifest(store, settings, tmp_path)
    dead = keys.parse_archive_key(key).revision
    # A corrected report arrives for the month: the next run publishes another revision.
    manifest = run_report(store, fixture_pdf(NEW_REPORT), settings, "inbox", MONTH)
    live = manifest.parent_revision
    assert live != dead and manifests(store) == [keys.manifest_key(manifest.report_id, live)]
    live_prefix = keys.archive_prefix(manifest.report_id, live)
    dead_prefix = keys.archive_prefix(manifest.report_id, dead)
    referenced = assert_archive_matches(store, manifest)
    live_objects = listing(store, f"{live_prefix}/")
    leftovers = {k for k in listing(store) if dead in k and not k.startswith("index/")}
    assert any(k.startswith(f"{dead_prefix}/{keys.IMAGES}/") for k in leftovers)

    hold = settings.retention.unfinished_hold
    for at in (clock.now, clock.now + hold - MIN):  # under the lease: nothing goes
        assert janitor.run(store, settings.work_root, at, settings.retention).deletions == []
    assert leftovers <= set(listing(store))

    late = clock.now + hold + 11 * MIN
    # Past the lease, until a janitor pass, the checks name the killed revision's leftovers.
    flagged = {name for name, passed in audit(store, settings, late).items() if not passed}
    assert flagged == {"work_material_deleted_by_deadline", "manifest_complete",
                       "archive_matches_manifest"}  # fmt: skip
    sweep = janitor.run(store, settings.work_root, late, settings.retention)
    assert sweep.deletions and {e.revision for e in sweep.deletions} == {dead}
    assert all(e.lag_seconds >= 0 for e in sweep.deletions)  # none before its deadline
    assert sum(e.objects for e in sweep.deletions) == len(leftovers)
    gone = leftovers - set(listing(store))
    assert gone == leftovers  # every unreferenced leftover, and only those:
    assert listing(store, f"{live_prefix}/") == live_objects  # the live revision is untouched
    assert referenced <= set(live_objects)
    logged = deletion_log.read(store, clock.now - timedelta(days=1))
    assert {(e.kind, e.revision, e.objects) for e in sweep.deletions} <= {
        (e.kind, e.revision, e.objects) for e in logged
    }  # an audit event for every deletion
    assert listing(store, f"{keys.WORK_INDEX}/") == {}
    assert all(audit(store, settings, late).values()), audit(store, settings, late)
    again = janitor.run(store, settings.work_root, late, settings.retention)
    assert again.deletions == []  # idempotent: the next pass finds nothing more
    # The long clock: the live revision's deadline is its manifest's.
    (marker,) = archive_markers(store, live)
    deadline = keys.parse_deadline_key(marker).deadline
    stated = parse_iso(manifest.deadlines.archive_delete_by)
    assert deadline == stated.replace(second=0, microsecond=0)


class EarlyExpiry(AssertionError):
    """The janitor expired a revision before the deadline its manifest states."""


def test_the_revision_is_not_expired_before_the_deadline_its_manifest_states(
    store, settings, tmp_path
):
    # The killed run ran 30 minutes before the next one (a retry after a restart, a re-execution
    # from failure): its process's clock is 30 minutes behind, as its deadlines are.
    key, _ = killed_at_manifest(store, settings, tmp_path, shift="-30m")
    manifest = run_report(store, fixture_pdf(REPORT), settings, "inbox", MONTH)
    assert manifests(store) == [key] and manifest.state == "complete"
    deadline = parse_iso(manifest.deadlines.archive_delete_by)
    early = deadline - 5 * MIN
    stale = archive_markers(store, manifest.parent_revision)  # the killed run's and the rerun's
    sweep = janitor.run(store, settings.work_root, early, settings.retention)
    if sweep.deletions:
        raise EarlyExpiry(
            f"markers {stale}, manifest deadline {manifest.deadlines.archive_delete_by}, "
            f"deleted at {early}: {[(e.kind, e.deadline, e.lag_seconds) for e in sweep.deletions]}"
        )
    assert store_json.read_manifest(store, key).state == "complete"
    # the stale marker now stands at the published deadline; the revision goes once, at it
    parsed = keys.parse_archive_key(key)
    published = keys.deadline_key(keys.ARCHIVE_INDEX, deadline, parsed.report_id, parsed.revision)
    assert archive_markers(store, manifest.parent_revision) == [published]
    due = janitor.run(store, settings.work_root, deadline + MIN, settings.retention)
    assert [(e.kind, parse_iso(e.deadline)) for e in due.deletions] == [("archive", deadline)]
    assert store_json.read_manifest(store, key).state == "expired"


def start_cli_run(root: Path, month: str, faults: str) -> subprocess.Popen:
    """`dagster asset materialize` of the month, as an operator runs it by hand: its own process,
    nobody watching it, on the test code location (the fault layer from the environment)."""
    home = root / "home"
    home.mkdir()
    shutil.copyfile(held_run.REPO / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), FAULTS_ENV: faults}
    command = [str(Path(sys.executable).parent / "dagster"), "asset", "materialize",
               "-m", "report_pipeline_tests.intake.live_definitions",
               "--select", "report_manifest", "--partition", month]  # fmt: skip
    return subprocess.Popen(
        command, cwd=held_run.REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def test_a_dagster_run_killed_at_its_manifest_is_failed_and_replaced_by_one_that_publishes(
    tmp_path, monkeypatch, clock
):
    from report_pipeline import definitions
    from report_pipeline.defs.deployment.deployment import deployment
    from report_pipeline.defs.reports.dead_runs import REPLACES_TAG, dead_run_sensor

    month = clock.latest_partition
    for name in ["inbox", "store", "work"]:
        monkeypatch.setenv(f"REPORT_PIPELINE_{name.upper()}", str(tmp_path / name))
    (tmp_path / "inbox" / month).mkdir(parents=True)
    shutil.copyfile(fixture_pdf(REPORT), tmp_path / "inbox" / month / "report.pdf")
    project = definitions.build_defs(deployment())  # loaded as a code location with these roots
    signal_file = tmp_path / "held.json"
    run = start_cli_run(tmp_path, month, f"pause={AT_MANIFEST},signal={signal_file}")
    try:
        key = held_run.held_at(run, signal_file)["key"]
    finally:
        killed = held_run.kill(run)
    store = LocalStore(tmp_path / "store")
    assert manifests(store) == [] and store_json.read_manifest(store, key) is None
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        (dead,) = instance.get_runs()
        assert dead.status == dg.DagsterRunStatus.STARTED  # nobody noticed: it holds its slot

        context = dg.build_sensor_context(instance=instance, definitions=project)
        (request,) = dead_run_sensor(context)  # its next tick (every 30 s)
        detected = time.monotonic() - killed
        failed = instance.get_run_by_id(dead.run_id)
        assert failed.status == dg.DagsterRunStatus.FAILURE
        (why,) = instance.all_logs(dead.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert "is gone; marked failed by dead_run_sensor" in why.message  # the run page says
        assert request.tags[REPLACES_TAG] == dead.run_id and request.partition_key == month

        healed = project.resolve_job_def("extract_report_job").execute_in_process(
            instance=instance, partition_key=month, tags=request.tags,
            run_config=request.run_config,
        )  # fmt: skip
        recovered = time.monotonic() - killed
        assert healed.success
    manifest = store_json.read_manifest(store, key)
    assert manifests(store) == [key] and manifest.state == "complete"  # the revision it wrote
    assert_archive_matches(store, manifest)
    assert listing(store, f"{keys.STAGED}/") == {} and listing(store, f"{keys.WORK}/") == {}
    policy = PipelineSettings(tmp_path / "work").retention
    late = clock.now + policy.unfinished_hold + 11 * MIN  # past the killed run's lease
    sweep = janitor.run(store, tmp_path / "work", late, policy)
    assert sweep.deletions == [] and listing(store, f"{keys.WORK_INDEX}/") == {}
    print(f"case 7 (Dagster CLI run): kill -> failed {detected:.2f} s (+ up to 30 s to the "
          f"sensor's tick), kill -> replacement published {recovered:.2f} s")  # fmt: skip

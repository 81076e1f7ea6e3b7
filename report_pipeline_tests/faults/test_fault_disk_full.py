"""Issue 33, case 2: the disk fills, first under the work root, then under the local store.

The embedded default (LocalStore, a sqlite instance: the fault is local). The root under test
lives on a tmpfs of its own (devstack/small_disk.py), and a real Dagster run of
`extract_report_job` is held by the fault layer at exactly one store call
(`pause=...,signal=...`, devstack/faults.py; nothing is injected there, the call is only held)
while the test fills that disk to its last byte; then the call goes on and meets the kernel's
own ENOSPC:
- work root: extraction fetching the staged report into its private workdir;
- store: the first PNG written to the archive;
- store: the manifest written, after every image.

Then: the step is a failure of its own, reason `disk_full`, naming the root by its setting
(`settings.work_root`, `store.root`) and no path, on its first attempt (never retried as
transient, never a refusal or a quarantine); no partial object under a final key nor in
`.partial/`; no manifest reads "complete"; a janitor pass on the full disk deletes nothing live,
and one that cannot write its audit events deletes nothing at all. Space back, "re-execute from
failure" publishes exactly one complete manifest over what the first run archived (none written
twice), nothing is left past the next janitor pass, the deadlines are the manifest's and every
deletion has its audit event."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest

from devstack.fault_runs import leftovers, month_manifest, step_attempts
from devstack.faults import FAULTS_ENV
from devstack.small_disk import SmallDisk, small_disk
from report_pipeline.core.checks import retention_audit
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import parse_iso
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.retention import deletion_log, janitor
from report_pipeline.core.scratch.workdir import create_workdir, new_lease
from report_pipeline.core.storage.local_store import PARTIAL, LocalStore
from report_pipeline.core.storage.store import STORE_ROOT, WORK_ROOT, DiskFull
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.faults import fault_job
from report_pipeline_tests.held_run import assert_archive_matches, listing

pytestmark = pytest.mark.live

REPORT = "image_paths.pdf"  # 9 pages, 11 distinct images
PAGES_PER_TASK = 3  # three page groups: three extract_pages steps
MIN = timedelta(minutes=1)
# Which root fills, and the store call held while it does (a pause spec of devstack/faults.py).
CASES = {
    "work root, staged report fetched": ("work", "pause=staged/*,pause_method=fetch"),
    "store, a PNG written": ("store", f"pause={keys.ARCHIVE}/*/{keys.IMAGES}/*"),
    "store, the manifest written": ("store", f"pause={keys.ARCHIVE}/*/{keys.MANIFEST}"),
}
SETTING = {"work": WORK_ROOT, "store": STORE_ROOT}


class Filled:
    """Fills `disk` when the held call signals, then lets it go on: when (wall clock)."""

    def __init__(self, disk: SmallDisk, signal_file: Path) -> None:
        self.disk, self.signal_file = disk, signal_file
        self.held: dict = {}
        self.full = False
        self.let_go = 0.0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        give_up = time.monotonic() + 120
        while not self.signal_file.exists():
            if time.monotonic() > give_up:
                return
            time.sleep(0.01)
        self.held = json.loads(self.signal_file.read_text())
        self.disk.fill()
        self.full = self.disk.free_bytes() == 0
        self.let_go = time.time()
        Path(f"{self.signal_file}.go").touch()


@pytest.fixture(params=sorted(CASES))
def case(request, tmp_path: Path, monkeypatch):
    """The roots (the one under test on a small disk of its own), the report in the inbox, a
    killed worker's workdir long past its lease, and the fault layer's hold: (root name, disk,
    signal file, dead workdir)."""
    root, pause = CASES[request.param]
    with small_disk(tmp_path / "disk") as disk:
        places = {name: tmp_path / name for name in ("inbox", "store", "work")}
        places[root] = disk.mount / root
        for name, place in places.items():
            monkeypatch.setenv(f"REPORT_PIPELINE_{name.upper()}", str(place))
        monkeypatch.delenv("REPORT_PIPELINE_DEPLOYMENT", raising=False)
        signal_file = tmp_path / "held.json"
        monkeypatch.setenv(FAULTS_ENV, f"{pause},signal={signal_file}")
        yield root, disk, places, signal_file


def dead_workdir(work_root: Path, now) -> Path:
    """The workdir of a worker killed two hours before `now`: due at `now`."""
    workdir = create_workdir(work_root, new_lease("dead/step", now - 120 * MIN, 60, 15))
    (workdir / "page.bin").write_bytes(b"x" * 1000)
    return workdir


def partial_writes(store_root: Path) -> list[str]:
    return sorted(p.name for p in (store_root / PARTIAL).iterdir())


def test_a_full_disk_is_its_own_failure_and_the_run_succeeds_on_reexecution(
    case, persistent_instance, clock, monkeypatch
):
    instance = persistent_instance  # its steps run in their own processes
    root, disk, places, signal_file = case
    month = clock.latest_partition
    (places["inbox"] / month).mkdir(parents=True)
    (places["inbox"] / month / "report.pdf").write_bytes(fixture_pdf(REPORT).read_bytes())
    settings = PipelineSettings(places["work"])
    dead = dead_workdir(settings.work_root, clock.now)
    filled = Filled(disk, signal_file)
    with fault_job.run(instance, month, PAGES_PER_TASK) as first:
        run_id, success = first.run_id, first.success
    filled.thread.join(timeout=5)
    assert filled.held and filled.full, "the run never reached the held call"
    store = LocalStore(places["store"])

    # Its own clear failure: not retried, not a refusal or a quarantine; the root named by its
    # setting, no path anywhere in it.
    assert not success
    assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
    attempts = step_attempts(instance, run_id)
    assert set(attempts.values()) == {1}, attempts  # nothing retried
    failures = fault_job.step_failures(instance, run_id)
    assert failures
    for failure in failures:
        error = failure.step_failure_data
        metadata = {k: v.value for k, v in error.user_failure_data.metadata.items()}
        assert metadata == {"reason": "disk_full", "root": SETTING[root], "attempts": 1}
        message = error.error.message
        assert (f"disk full, not retried: {SETTING[root]} is full (no space left on device) "
                "while writing ") in message, message  # fmt: skip
        assert str(places[root].parent) not in message and str(places["inbox"]) not in message
    detected = min(f.timestamp for f in instance.all_logs(
        run_id, of_type=dg.DagsterEventType.STEP_FAILURE)) - filled.let_go  # fmt: skip

    # Nothing partial: no object under the key being written, none half-written in .partial/,
    # no manifest (so nothing reads "complete"), no workdir left behind by the failed steps.
    held_key = filled.held["key"]
    manifests = [k for k in listing(store, f"{keys.ARCHIVE}/") if k.endswith(keys.MANIFEST)]
    assert manifests == [] and partial_writes(places["store"]) == []
    if filled.held["method"] != "fetch":
        assert not store.exists(held_key)
    assert [w for w in settings.work_root.rglob("w-*") if w != dead] == []
    before = {k: m for k, m in listing(store).items() if f"/{keys.IMAGES}/" in k}

    # The janitor on the full disk: nothing live goes to make room. Its one due item (the dead
    # worker's workdir) goes with its audit event where the store has room; where it has none,
    # the pass fails on the event with nothing deleted (events are written first).
    stored = {k: m for k, m in listing(store).items() if not k.startswith(f"{keys.AUDIT}/")}
    if root == "store":
        with pytest.raises(DiskFull, match="store.root is full"):
            janitor.run(store, settings.work_root, clock.now, settings.retention)
        assert dead.exists()
    else:
        sweep = janitor.run(store, settings.work_root, clock.now, settings.retention)
        assert [(e.kind, e.item) for e in sweep.deletions] == [("workdir", dead.name)]
    kept = listing(store)
    assert {k: kept.get(k) for k in stored} == stored  # none gone, none rewritten

    # Space back: re-execute from failure.
    disk.empty()
    freed = time.time()
    monkeypatch.delenv(FAULTS_ENV)
    with fault_job.reexecute_from_failure(instance, run_id) as second:
        assert second.success, fault_job.step_failures(instance, second.run_id)
        healed = second.run_id
    published = min(e.timestamp for e in instance.all_logs(
        healed, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)) - freed  # fmt: skip
    assert set(step_attempts(instance, healed).values()) == {1}

    manifest, _ = month_manifest(store, month)  # one revision, one complete manifest
    report_id, revision = manifest.report_id, manifest.parent_revision
    key = keys.manifest_key(report_id, revision)
    assert manifest.state == "complete" and store_json.read_manifest(store, key) == manifest
    assert manifest.counts.pages_unaccounted == 0 and manifest.counts.quarantined == 0
    referenced = assert_archive_matches(store, manifest)  # every image once, none missing
    after = listing(store)
    assert {k: after[k] for k in before} == before  # archived before the fault: not rewritten
    assert leftovers(store) == [] and partial_writes(places["store"]) == []

    # The next janitor pass: the dead workdir (if still there) with its event, nothing else;
    # past every short deadline, nothing at all.
    sweep = janitor.run(store, settings.work_root, clock.now, settings.retention)
    assert [e.item for e in sweep.deletions] == ([dead.name] if root == "store" else [])
    assert not dead.exists()
    late = clock.now + settings.retention.unfinished_hold + 11 * MIN
    assert janitor.run(store, settings.work_root, late, settings.retention).deletions == []
    assert listing(store, f"{keys.WORK_INDEX}/") == {}
    outcomes = retention_audit.audit_all(store, settings.work_root, late, settings.retention)
    assert all(o.passed for o in outcomes), [(o.name, o.passed) for o in outcomes]
    assert referenced <= set(listing(store, keys.archive_prefix(report_id, revision)))
    events = deletion_log.read(store, clock.now - timedelta(days=1))
    assert sorted((e.kind, e.item) for e in events) == sorted(
        [("working_material", revision), ("workdir", dead.name)]
    )  # one event for every deletion, and only one
    # The archive marker states the manifest's deadline. Where the failed attempt had written
    # one before its manifest failed and the re-execution published in a later minute, that
    # earlier marker stays too (a minute or so earlier): the janitor then deletes at the
    # published deadline, never before it (janitor.published_deadline).
    markers = [k for k in listing(store, f"{keys.ARCHIVE_INDEX}/") if k.endswith(revision)]
    stated = parse_iso(manifest.deadlines.archive_delete_by).replace(second=0, microsecond=0)
    deadlines = sorted(keys.parse_deadline_key(marker).deadline for marker in markers)
    assert deadlines and deadlines[-1] == stated and len(deadlines) <= 2, deadlines
    print(f"case 2 ({root} full at {filled.held['method']} {held_key.split('/')[-1]}): failed "
          f"{detected:.2f} s after the disk filled, {len(failures)} step(s) disk_full, no "
          f"retries; re-executed and published {published:.2f} s after space was back")  # fmt: skip

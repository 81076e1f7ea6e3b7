"""`dagster dev` (webserver, daemon and the code server they share) for the backfill benchmark,
the GraphQL calls it makes as the UI makes them, and the backfill's timeline from the instance."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from bench import common
from bench.backfill_timeline import timeline
from bench.common import ROOT, BenchError
from devstack.loopback import free_port
from report_pipeline import graphql_api
from report_pipeline.core.model.store_json import read_manifest
from report_pipeline.core.storage.store import Store

BIN = Path(sys.executable).parent
REPOSITORY = {"repositoryLocationName": "report_pipeline", "repositoryName": "__repository__"}
DAEMONS = {"BACKFILL", "QUEUED_RUN_COORDINATOR"}
# The UI's launch dialogs: a job's partitions page sends the job's partition set with the job's
# assets (a job backfill); an asset's page sends only the asset (an asset backfill).
LAUNCH = """mutation($b: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $b) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on Error { message } } }"""
BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill { status timestamp endTimestamp } } }"""
DAEMON_HEALTH = """query { instance { daemonHealth { allDaemonStatuses {
    daemonType healthy lastHeartbeatTime } } } }"""
DAEMON_LOOP_S = 30  # the backfill daemon's loop: fixed in Dagster 1.13 (see bench/HISTORY.md)
SENSOR = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
    ... on Sensor { sensorState { id status ticks(limit: 1) { status } } } } }"""
STOP_SENSOR = "mutation($id: String) { stopSensor(id: $id) { __typename } }"
# `dagster dev`'s processes; runs are children of the code server's gRPC process
ROLES = {"dagster_webserver": "webserver", "dagster._daemon": "daemon",
         "api grpc": "code server", "code-server start": "code-server proxy",
         "dagster dev": "dagster dev"}  # fmt: skip
FINISHED = {"COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED", "COMPLETED"}


@dataclass
class Live:
    url: str
    log: Path
    pgid: int = 0  # `dagster dev`'s process group: webserver, daemon, code server, run workers
    workers: tuple[int, ...] = ()  # Celery workers' process groups, when there are any

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        try:
            return graphql_api.call(f"{self.url}/graphql", query, variables, timeout=60)
        except graphql_api.DagsterApiError as error:
            raise BenchError(str(error)) from None

    def stop_sensor(self, name: str) -> None:
        """As the sensor's toggle in the UI does; returns once no tick of it is in progress (a
        tick that started before the stop could still launch runs)."""
        selector = {**REPOSITORY, "sensorName": name}

        def state() -> dict:
            return self.graphql(SENSOR, {"s": selector})["sensorOrError"]["sensorState"]

        self.graphql(STOP_SENSOR, {"id": state()["id"]})
        time.sleep(2)  # a tick the daemon began just before the stop shows as STARTED by now

        def idle() -> bool:
            now = state()
            running = any(t["status"] == "STARTED" for t in now["ticks"])
            return now["status"] == "STOPPED" and not running

        wait(idle, f"{name} to stop", 120, self.log)

    def launch(self, months: list[str], kind: str) -> str:
        params: dict[str, Any] = {"partitionNames": months}
        if kind == "job":
            params["selector"] = {
                "partitionSetName": "extract_report_job_partition_set",
                "repositorySelector": {
                    "repositoryLocationName": REPOSITORY["repositoryLocationName"],
                    "repositoryName": REPOSITORY["repositoryName"],
                },
            }
            params["assetSelection"] = [{"path": ["report_manifest"]}, {"path": ["manifest_table"]}]
        else:
            params["assetSelection"] = [{"path": ["report_manifest"]}]
        launched = self.graphql(LAUNCH, {"b": params})["launchPartitionBackfill"]
        if launched["__typename"] != "LaunchBackfillSuccess":
            raise BenchError(f"backfill refused: {launched}")
        return launched["backfillId"]

    def before_backfill_tick(self, seconds: float) -> float:
        """Sleep until `seconds` before the backfill daemon's next loop. It loops every 30 s
        and posts its heartbeat as each loop begins, so a click at a random moment waits 15 s
        on average for its runs to be created. Returns the seconds slept."""
        statuses = self.graphql(DAEMON_HEALTH)["instance"]["daemonHealth"]["allDaemonStatuses"]
        (beat,) = [d["lastHeartbeatTime"] for d in statuses if d["daemonType"] == "BACKFILL"]
        until = beat - seconds
        while until <= time.time() + 0.5:
            until += DAEMON_LOOP_S
        pause = until - time.time()
        time.sleep(pause)
        return pause

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far by process; the run workers (and their decoders) finished so far
        are "code server: reaped"."""
        found = common.group_cpu(self.pgid, ROLES)
        for pgid in self.workers:
            worker = sum(common.group_cpu(pgid, {}).values())
            found["celery workers"] = found.get("celery workers", 0.0) + worker
        return found

    def backfill(self, backfill_id: str) -> dict:
        return self.graphql(BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]

    def wait_backfill(self, backfill_id: str, timeout: float) -> dict:
        found = wait(lambda: (b := self.backfill(backfill_id))["status"] in FINISHED and b,
                     f"backfill {backfill_id}", timeout, self.log, poll=1.0)  # fmt: skip
        if found["status"] != "COMPLETED_SUCCESS":
            raise BenchError(f"backfill ended {found['status']}; see {self.log}")
        return found


def wait(probe: Callable[[], Any], what: str, timeout: float, log: Path, poll=0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(poll)
    raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}; the end of "
                     f"{log.name} (its folder goes with the benchmark):\n{_tail(log)}")  # fmt: skip


def _tail(log: Path, lines: int = 40) -> str:
    """The log's last lines, kept in the error: the benchmark's folder is removed after it."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def dagster_dev(
    root: Path, env: dict[str, str], timeout: float = 240, workspace: Path = ROOT / "workspace.yaml"
) -> Iterator[Live]:
    """`dagster dev -w workspace.yaml` (what `make dev` runs; `workspace`: another one, e.g. an
    experiment's code location) in its own session on a free loopback port, with `env`
    (DAGSTER_HOME and the roots); ready once the webserver answers and the backfill and run-queue
    daemons are healthy. Its whole process group is stopped after."""
    port = free_port()
    live = Live(f"http://127.0.0.1:{port}", root / "dagster-dev.log")
    command = [str(BIN / "dagster"), "dev", "-w", str(workspace),
               "-h", "127.0.0.1", "-p", str(port)]  # fmt: skip
    with open(live.log, "wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    live.pgid = process.pid
    try:

        def healthy() -> bool:
            if process.poll() is not None:
                raise BenchError(f"dagster dev exited; see {live.log}")
            if not graphql_api.serving(live.url):
                return False
            statuses = live.graphql(DAEMON_HEALTH)["instance"]["daemonHealth"]
            up = {d["daemonType"] for d in statuses["allDaemonStatuses"] if d["healthy"]}
            return up >= DAEMONS

        wait(healthy, "dagster dev", timeout, live.log)
        yield live
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the group, SIGKILL after 15 s (dagster dev once took over 60 s to exit)."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=15)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # the code server's run workers too
    process.wait(timeout=30)


def month_counts(store: Store, months: list[str]) -> list[dict]:
    """Each month's counts, from its one manifest (more or fewer, or unreadable: BenchError)."""
    found = []
    for month in months:
        keys = [o.key for o in store.list(f"archive/inbox-{month}/")
                if o.key.endswith("/manifest.json")]  # fmt: skip
        if len(keys) != 1:
            raise BenchError(f"{month}: {len(keys)} manifests, expected 1")
        manifest = read_manifest(store, keys[0])
        if manifest is None:
            raise BenchError(f"{month}: unreadable manifest")
        found.append(asdict(manifest.counts))
    return found


def check_manifests(store: Store, months: list[str], counts: dict) -> None:
    for month, found in zip(months, month_counts(store, months), strict=True):
        if found != counts:
            raise BenchError(f"{month}: manifest counts differ from the plain loop's")


def run_backfill(live: Live, home: Path, months: list[str], args: argparse.Namespace) -> dict:
    live.before_backfill_tick(args.tick_wait)
    started, before = time.time(), live.cpu()
    backfill_id = live.launch(months, args.kind)
    found = live.wait_backfill(backfill_id, args.timeout)
    observed, after = time.time() - started, live.cpu()
    cpu = {role: after.get(role, 0.0) - before.get(role, 0.0) for role in after}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        t = timeline(instance, backfill_id, found["timestamp"], found["endTimestamp"])
    if t["other_report_runs"]:  # e.g. the intake sensor's: they compete for the same slots
        raise BenchError(f"report runs outside the backfill: {t['other_report_runs']}")
    failed = [r for r in t["runs"] if r["status"] != "SUCCESS"]
    if failed or len(t["runs"]) != len(months):
        raise BenchError(f"{len(t['runs'])} runs for {len(months)} months, failed: {failed}")
    return {"backfill_id": backfill_id, "observed_wall_s": observed, "dagster_cpu_s": cpu, **t}

"""A real `dagster dev` (webserver + daemon) on loopback, in a temporary DAGSTER_HOME, with the
inbox, store and work roots in temporary folders; and the GraphQL calls the tests make."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from devstack.loopback import free_port
from report_pipeline import graphql_api
from report_pipeline_tests.conftest import fixture_pdf

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EMBEDDED = REPO / "dagster_home" / "dagster.yaml"
SENSOR = {
    "repositoryLocationName": "report_pipeline",
    "repositoryName": "__repository__",
    "sensorName": "new_report_sensor",
}
BACKFILL = ["2026-05", "2026-06", "2026-07"]  # the intake `live` server's; test_live checks it
T = TypeVar("T")


@dataclass
class LiveDagster:
    url: str
    root: Path
    start_daemon: Callable[[], None]
    backfill_id: str = ""

    @property
    def env(self) -> dict[str, str]:
        return {
            "REPORT_PIPELINE_INBOX": str(self.root / "inbox"),
            "REPORT_PIPELINE_STORE": str(self.root / "store"),
            "REPORT_PIPELINE_WORK": str(self.root / "work"),
        }

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        return graphql_api.call(f"{self.url}/graphql", query, variables)

    def runs(self, tags: dict[str, str]) -> list[dict]:
        """Every run with these tags: id, status and tags as a dict."""
        query = """query($f: RunsFilter) { runsOrError(filter: $f) { ... on Runs {
            results { runId status tags { key value } } } } }"""
        wanted = [{"key": k, "value": v} for k, v in tags.items()]
        results = self.graphql(query, {"f": {"tags": wanted}})["runsOrError"]["results"]
        return [
            {
                "id": r["runId"],
                "status": r["status"],
                "tags": {t["key"]: t["value"] for t in r["tags"]},
            }
            for r in results
        ]

    def sensor(self, fields: str) -> dict:
        query = f"""query($s: SensorSelector!) {{ sensorOrError(sensorSelector: $s) {{
            ... on Sensor {{ {fields} }} }} }}"""
        return self.graphql(query, {"s": SENSOR})["sensorOrError"]

    def set_sensor(self, running: bool) -> None:
        """Start or stop `new_report_sensor`, as its toggle in the UI does."""
        if running:
            start = "mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) {"
            self.graphql(start + " __typename } }", {"s": SENSOR})
        else:
            state = self.sensor("sensorState { id }")["sensorState"]["id"]
            stop = "mutation($id: String) { stopSensor(id: $id) { __typename } }"
            self.graphql(stop, {"id": state})

    def skip_reasons(self) -> list[str]:
        ticks = self.sensor("sensorState { ticks(limit: 50) { skipReason } }")
        return [t["skipReason"] or "" for t in ticks["sensorState"]["ticks"]]


def place(root: Path, fixture: str, folder: str, name: str) -> Path:
    """Copy a fixture PDF into the live inbox as `<folder>/<name>`."""
    target = root / "inbox" / folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(fixture_pdf(fixture), target))


def launch_backfill(live: LiveDagster, months: list[str]) -> str:
    """The mutation the UI sends for Materialize → partitions → Launch backfill."""
    launched = live.graphql(
        """mutation($p: [String!]) { launchPartitionBackfill(backfillParams: {
            assetSelection: [{path: ["report_manifest"]}], partitionNames: $p}) {
            __typename ... on LaunchBackfillSuccess { backfillId } } }""",
        {"p": months},
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    return launched["backfillId"]


def finished(live: LiveDagster, tags: dict[str, str]) -> list[dict]:
    """The runs with these tags once all succeeded, else []; a failed or canceled one fails."""
    runs = live.runs(tags)
    assert all(r["status"] not in ("FAILURE", "CANCELED") for r in runs), runs
    return runs if runs and all(r["status"] == "SUCCESS" for r in runs) else []


def wait_for(probe: Callable[[], T | None], what: str, timeout: float = 180.0) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _prepare(root: Path, instance_yaml: Path) -> Path:
    home = root / "home"
    home.mkdir(parents=True)
    config = instance_yaml.read_text()
    (home / "dagster.yaml").write_text(config)  # the committed instance, run queue included
    workspace = root / "workspace.yaml"
    location = {
        "module_name": "report_pipeline_tests.intake.live_definitions",
        "location_name": "report_pipeline",
        "working_directory": str(REPO),
    }
    workspace.write_text(json.dumps({"load_from": [{"python_module": location}]}))
    for folder in ["inbox", "store", "work"]:
        (root / folder).mkdir(exist_ok=True)
    return workspace


@contextmanager
def running_dagster(
    root: Path, instance_yaml: Path = EMBEDDED, extra_env: dict[str, str] | None = None
) -> Iterator[LiveDagster]:
    """`dagster-webserver` now and `dagster-daemon` when asked (what `dagster dev` runs), each
    in its own process group on loopback; both always killed, with every run they started.
    `instance_yaml`: the instance's dagster.yaml (the embedded default's unless given)."""
    workspace, port, processes = _prepare(root, instance_yaml), free_port(), []
    live = LiveDagster(f"http://127.0.0.1:{port}", root, lambda: None)
    env = {**os.environ, **live.env, **(extra_env or {}), "DAGSTER_HOME": str(root / "home")}

    def start(name: str, *args: str) -> subprocess.Popen:
        with open(root / f"{name}.log", "wb") as log:
            processes.append(subprocess.Popen(
                [str(BIN / name), *args, "-w", str(workspace)], cwd=REPO, env=env,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            ))  # fmt: skip
        return processes[-1]

    def start_daemon() -> None:
        start("dagster-daemon", "run")

    live.start_daemon = start_daemon
    try:
        webserver = start("dagster-webserver", "-p", str(port), "-h", "127.0.0.1")
        wait_for(
            lambda: graphql_api.serving(live.url) or webserver.poll() is not None, "webserver", 180
        )
        assert webserver.poll() is None, (root / "dagster-webserver.log").read_text()[-3000:]
        yield live
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGKILL)  # the group: code servers and runs too
            process.wait(timeout=30)

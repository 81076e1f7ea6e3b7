"""The production topology on one machine, each server a process the test can kill or restart on
its own (issue 33, cases 1, 3 and 4): a PostgreSQL server the test owns (a throwaway server, never
the shared one, so it can be restarted or stopped), the S3 store and source on moto's server, the
code location as its own gRPC code server (`dagster api grpc`, as the `code` container of
deploy/production/compose.yaml), and a webserver and a daemon that reach it by gRPC
(deploy/production/workspace.grpc.yaml's shape). Runs are launched by the daemon's run queue
through the code server, so a run worker is a child of the code server, not of the daemon.

The instance is the committed deploy/production/dagster.yaml (run monitoring, run retries, the
run queue's limits); the test reads the runs back through an instance of its own on the same
database, and the archive through the store without faults."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import dagster as dg

from devstack import local_postgres
from devstack.faults import FAULTS_ENV
from devstack.local_postgres import Server, fresh_database, throwaway_server
from devstack.loopback import free_port
from report_pipeline import graphql_api
from report_pipeline_tests.faults.live_backfill import REPORT, LiveBackfill
from report_pipeline_tests.intake.live import BIN, REPO, LiveDagster, wait_for
from report_pipeline_tests.postgres import production_home
from report_pipeline_tests.production.conftest import Backend

LOCATION = "report_pipeline"
DAEMONS = """query { instance { daemonHealth { allDaemonStatuses {
    daemonType healthy lastHeartbeatTime } } } }"""
LOCATION_STATUS = """query { workspaceOrError { ... on Workspace { locationEntries {
    name loadStatus locationOrLoadError { __typename } } } } }"""


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Servers:
    """The running servers; `backfill` is the usual LiveBackfill view of the same deployment."""

    root: Path
    postgres: Server
    env: dict[str, str]
    code_port: int
    workspace: Path
    backfill: LiveBackfill | None = None
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    groups: list[int] = field(default_factory=list)  # every process group started: all killed

    @property
    def live(self) -> LiveDagster:
        return self.backfill.live

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        with open(self.root / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                [str(BIN / args[0]), *args[1:]], cwd=REPO, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.processes[name] = process
        self.groups.append(process.pid)
        return process

    def kill(self, name: str, group: bool = False) -> float:
        """SIGKILL the server `name` (its process only, or with `group` its whole process group,
        as a container's end takes every process in it); when it died (monotonic)."""
        process = self.processes.pop(name)
        if group:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
        process.wait(timeout=30)
        return time.monotonic()

    def start_code_server(self) -> None:
        """`dagster api grpc` for the test code location on its fixed port, until it serves."""
        process = self._start(
            "code-server", "dagster", "api", "grpc", "-m",
            "report_pipeline_tests.intake.live_definitions", "-h", "127.0.0.1",
            "-p", str(self.code_port), "--location-name", LOCATION,
        )  # fmt: skip
        wait_for(lambda: listening(self.code_port) or process.poll() is not None, "code server")
        assert process.poll() is None, (self.root / "code-server.log").read_text()[-3000:]

    def start_daemon(self) -> None:
        self._start("daemon", "dagster-daemon", "run", "-w", str(self.workspace))

    def start_webserver(self, port: int) -> None:
        process = self._start(
            "webserver", "dagster-webserver", "-p", str(port), "-h", "127.0.0.1",
            "-w", str(self.workspace),
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: graphql_api.serving(url) or process.poll() is not None, "webserver", 180)
        assert process.poll() is None, (self.root / "webserver.log").read_text()[-3000:]

    def daemons(self) -> dict[str, bool]:
        """The UI's Deployment → Daemons page: each daemon's health."""
        statuses = self.live.graphql(DAEMONS)["instance"]["daemonHealth"]["allDaemonStatuses"]
        return {s["daemonType"]: s["healthy"] for s in statuses}

    def location_loaded(self) -> bool:
        """The UI's Deployment → Code locations: the location is loaded, without an error."""
        entries = self.live.graphql(LOCATION_STATUS)["workspaceOrError"]["locationEntries"]
        (entry,) = [e for e in entries if e["name"] == LOCATION]
        loaded = entry["locationOrLoadError"] or {}
        return entry["loadStatus"] == "LOADED" and loaded.get("__typename") == "RepositoryLocation"

    def reload_location(self) -> None:
        """Deployment → Code locations → Reload, as an operator clicks it."""
        mutation = """mutation($l: String!) { reloadRepositoryLocation(repositoryLocationName: $l)
            { __typename } }"""
        self.live.graphql(mutation, {"l": LOCATION})

    def pg_restart(self) -> float:
        """`pg_ctl restart -m fast` on the test's own server: how long it took."""
        began = time.monotonic()
        local_postgres.restart(self.postgres, "fast")
        return time.monotonic() - began

    def pg_stop(self) -> None:
        local_postgres.stop(self.postgres, "fast")

    def pg_start(self) -> None:
        local_postgres.start(self.postgres)


@contextmanager
def production_servers(
    root: Path, backend: Backend, monkeypatch, faults: str = ""
) -> Iterator[Servers]:
    """Postgres (the test's own server), moto S3 (`backend`), a code server, a webserver; the
    daemon when the test starts it. Every server is killed at the end, with its process group."""
    root.mkdir(parents=True, exist_ok=True)
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    monkeypatch.setenv("REPORT_PIPELINE_DEPLOYMENT", "production")
    journal = root / "faults.jsonl"
    with throwaway_server() as postgres, fresh_database(postgres, "rp_servers") as url:
        home = production_home(root / "home")
        env = {**os.environ, **backend.env, "DAGSTER_PG_URL": url, "DAGSTER_HOME": str(home),
               "REPORT_PIPELINE_DEPLOYMENT": "production"}  # fmt: skip
        if faults:
            env[FAULTS_ENV] = f"{faults},journal={journal}"
        code_port = free_port()
        workspace = root / "workspace.yaml"
        grpc = {"host": "127.0.0.1", "port": code_port, "location_name": LOCATION}
        workspace.write_text(json.dumps({"load_from": [{"grpc_server": grpc}]}))
        servers = Servers(root, postgres, env, code_port, workspace)
        try:
            servers.start_code_server()
            port = free_port()
            servers.start_webserver(port)
            live = LiveDagster(f"http://127.0.0.1:{port}", root, servers.start_daemon)
            monkeypatch.setenv("DAGSTER_PG_URL", url)
            reader = production_home(root / "reader")
            monkeypatch.setenv("DAGSTER_HOME", str(reader))
            with dg.DagsterInstance.from_config(str(reader)) as instance:
                drop = partial(backend.drop, REPORT)  # (month)
                servers.backfill = LiveBackfill(
                    "production", live, instance, backend.store(), drop, journal
                )
                yield servers
        finally:
            for group in servers.groups:
                with suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)  # the group: runs under it too
            for process in servers.processes.values():
                process.wait(timeout=30)
            if not local_postgres.answering(postgres.host, postgres.port):
                with suppress(RuntimeError):
                    local_postgres.start(postgres)  # so that the database can be dropped

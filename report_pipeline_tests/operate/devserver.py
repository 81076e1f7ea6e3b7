"""`make dev` in a temporary DAGSTER_HOME (the committed dagster.yaml) on a free port, with its
own process group, and the GraphQL calls the operate tests make."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from report_pipeline.graphql_api import serving
from report_pipeline_tests.intake.live import REPO, LiveDagster, free_port, place, wait_for

LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
    __typename ... on LaunchRunSuccess { run { runId } } } }"""
STATUS = """query($r: ID!) { runOrError(runId: $r) { ... on Run { status } } }"""
STATUSES = """query { runsOrError { ... on Runs { results { status } } } }"""


@dataclass
class DevServer(LiveDagster):
    """`make dev`: LiveDagster's GraphQL calls, plus the process group to stop."""

    process: subprocess.Popen | None = None
    home: Path = Path()

    def launch(self, month: str = "2026-10") -> str:
        params = {
            "selector": {"repositoryLocationName": "report_pipeline",
                         "repositoryName": "__repository__", "jobName": "extract_report_job"},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": month}]},
        }  # fmt: skip
        launched = self.graphql(LAUNCH, {"p": params})["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        return launched["run"]["runId"]

    def status(self, run_id: str) -> str:
        return self.graphql(STATUS, {"r": run_id})["runOrError"]["status"]

    def statuses(self) -> list[str]:
        """Every run's status (the sensor may have launched one for the same report)."""
        return [r["status"] for r in self.graphql(STATUSES)["runsOrError"]["results"]]

    def group(self) -> list[str]:
        """The live (not zombie) processes of `make dev`'s process group."""
        listing = subprocess.run(
            ["ps", "-o", "pid=,stat=,args=", "-g", str(self.process.pid)],
            capture_output=True, text=True, check=False,
        ).stdout  # fmt: skip
        return [line for line in listing.splitlines() if "Z" not in line.split()[1]]


@contextmanager
def make_dev(
    root: Path,
    report: str | None = "repeated_image.pdf",
    sigint: object = signal.SIG_DFL,
    extra_env: dict[str, str] | None = None,
) -> Iterator[DevServer]:
    """`make dev` as a user runs it, in its own session, with `report` (a fixture) in the inbox's
    2026-10 folder, or an empty inbox; its whole group is killed at the end. `sigint` is the
    SIGINT disposition it starts with: a terminal's default, or ignored (`signal.SIG_IGN`) as by
    a script's `setsid make dev &` (whatever the test process itself was started with).
    A `root` used before is used again as it is (a restart: same instance, inbox and store);
    `extra_env` is added to the environment it starts with."""
    home, port = root / "home", free_port()
    home.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    (root / "inbox").mkdir(parents=True, exist_ok=True)
    if report:
        place(root, report, "2026-10", report)
    roots = {f"REPORT_PIPELINE_{name.upper()}": str(root / name)
             for name in ("inbox", "store", "work")}  # fmt: skip
    env = {**os.environ, **roots, **(extra_env or {})}
    command = ["make", "--no-print-directory", "dev", f"DAGSTER_HOME={home}",
               f"DEV_FLAGS=-h 127.0.0.1 -p {port}"]  # fmt: skip
    with open(root / "dev.log", "wb") as log:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=lambda: _dispositions(sigint),
        )  # fmt: skip
    server = DevServer(f"http://127.0.0.1:{port}", root, lambda: None, process=process, home=home)
    try:
        wait_for(lambda: serving(server.url) or process.poll() is not None, "dagster dev", 180)
        assert process.poll() is None, (root / "dev.log").read_text()[-3000:]
        yield server
    finally:
        if server.group():
            os.killpg(process.pid, 9)
        process.wait(timeout=30)


def _dispositions(sigint: object) -> None:
    """In the child, before exec: SIGINT as asked, SIGTERM at its default. Both are reset
    because this process's own may have changed: Dagster's in-process runs give SIGTERM
    SIGINT's disposition (dagster._utils.interrupts), so where pytest started with SIGINT
    ignored (a background CI run) SIGTERM ends up ignored too, and make would inherit that."""
    signal.signal(signal.SIGINT, sigint)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def wait_until(probe, timeout: float) -> float:
    """Seconds until `probe()` is true, or `timeout` if it never was."""
    start = time.monotonic()
    while time.monotonic() - start < timeout and not probe():
        time.sleep(0.1)
    return time.monotonic() - start

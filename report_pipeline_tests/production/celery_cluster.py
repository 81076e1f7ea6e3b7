"""Two probed Celery workers on a throwaway Redis, sharing only a fresh Postgres database and the
moto S3 server with a `dagster asset materialize` orchestrator (test_celery.py), and what the
event log says about which worker took which step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from devstack import local_celery
from devstack.local_postgres import fresh_database
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline_tests.postgres import production_home
from report_pipeline_tests.production.conftest import Backend

PROBE = Path(__file__).resolve().parent / "celery_probe.py"
MONTH = "2026-10"
PAGES_PER_TASK = 17  # monthly_report.pdf's 140 pages: 9 page groups (8 of 17, one of 4)
WORKERS = ["w1", "w2"]
EXECUTING = "in celery worker"  # dagster-celery's engine event when a worker takes a step


@dataclass
class Cluster:
    root: Path
    env: dict[str, str]  # what every process shares: Postgres, S3, Redis, the deployment
    workers: list[local_celery.Worker]
    instance: dg.DagsterInstance  # the same database, read from this process

    @property
    def orchestrator(self) -> Path:
        return self.root / "orchestrator"

    def materialize(self, month: str) -> subprocess.Popen:
        """`dagster asset materialize` of the month's report_manifest, in its own process."""
        home = production_home(self.orchestrator / "home")
        (self.orchestrator / "cwd").mkdir(exist_ok=True)
        config = stage_report_run_config({"pages_per_task": PAGES_PER_TASK})
        own = {"DAGSTER_HOME": str(home), "REPORT_PIPELINE_WORK": str(self.orchestrator / "work"),
               "TMPDIR": str(self.orchestrator)}  # fmt: skip
        command = [sys.executable, "-m", "dagster", "asset", "materialize", "-m",
                   "report_pipeline.definitions", "--select", "report_manifest",
                   "--partition", month, "--config-json", json.dumps(config)]  # fmt: skip
        log = open(self.orchestrator / "materialize.log", "wb")  # noqa: SIM115 (the process keeps it)
        return subprocess.Popen(
            command, cwd=self.orchestrator / "cwd", env={**self.env, **own}, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def finish(self, process: subprocess.Popen, timeout: float = 150) -> dg.DagsterRun:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        log = (self.orchestrator / "materialize.log").read_text(errors="replace")
        logs = "\n".join(f"--- {w.name}\n{w.tail()}" for w in self.workers)
        assert process.returncode == 0, f"{log[-4000:]}\n{logs}"
        (run,) = self.instance.get_runs()
        assert run.status == dg.DagsterRunStatus.SUCCESS
        return run

    def files(self, worker: local_celery.Worker) -> list[dict]:
        record = worker.root / "files.jsonl"
        return [json.loads(line) for line in record.read_text().splitlines()]


@contextmanager
def cluster(
    tmp_path: Path, postgres, backend: Backend, monkeypatch,
    visibility_timeout: int | None = None, stall: str = "",
) -> Iterator[Cluster]:  # fmt: skip
    """A fresh database, Redis, and two probed workers (the `stall` worker hangs in its first
    extract_pages step: see celery_probe.py)."""
    root = tmp_path / "cluster"
    with (
        fresh_database(postgres.server, "rp_celery") as url,
        local_celery.redis_server() as redis,
    ):
        env = {
            "PATH": os.environ["PATH"], **backend.env, **redis.env,
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "DAGSTER_PG_URL": url,
            "REPORT_PIPELINE_DEPLOYMENT": "production", "REPORT_PIPELINE_EXECUTOR": "celery",
        }  # fmt: skip
        env.pop("REPORT_PIPELINE_WORK")  # each process has its own
        if visibility_timeout:
            env["REPORT_PIPELINE_CELERY_VISIBILITY_TIMEOUT"] = str(visibility_timeout)
        own = {name: {"RP_TEST_WATCH": str(tmp_path)} for name in WORKERS}
        if stall:
            own[stall]["RP_TEST_STALL"] = str(root / f"{stall}.stalled")
        command = [sys.executable, str(PROBE)]
        with local_celery.workers(root, WORKERS, env, redis.url(0), command, own_env=own) as ws:
            monkeypatch.setenv("DAGSTER_PG_URL", url)
            home = production_home(tmp_path / "reader")
            monkeypatch.setenv("DAGSTER_HOME", str(home))
            with dg.DagsterInstance.from_config(str(home)) as instance:
                yield Cluster(root, env, ws, instance)


def engine_workers(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """(step key, Celery worker name) for each time a worker took a step, in order."""
    taken = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        if EXECUTING in (event.message or ""):
            worker = event.event_specific_data.metadata["Celery worker"].value
            taken.append((event.step_key, worker.split("@")[0]))
    return taken


def step_counts(instance, run_id: str, kind: dg.DagsterEventType) -> Counter:
    return Counter(e.dagster_event.step_key for e in instance.all_logs(run_id, of_type=kind))

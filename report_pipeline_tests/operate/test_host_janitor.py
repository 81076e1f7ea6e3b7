"""The host janitor (report_pipeline/host_janitor.py) every Celery worker starts beside itself:
it removes this host's expired workdirs with an audit event in the deployment's store, keeps
one under a live lease, and does not outlive the process that started it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.retention import deletion_log
from report_pipeline.core.scratch.workdir import new_lease, private_workdir
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
_NEVER_EXITED = []  # a dead worker's workdir: its `finally` never runs


def dead_workdir(work_root: Path) -> Path:
    policy = PipelineSettings(work_root).retention  # a lease without a holder: the clock decides
    context = private_workdir(
        work_root, new_lease("run/step", utc_now(), policy.lease_minutes, policy.work_minutes)
    )
    workdir = context.__enter__()
    _NEVER_EXITED.append(context)
    (workdir / "page.bin").write_bytes(b"x" * 1000)
    return workdir


def host_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORT_PIPELINE_")}
    env.update({f"REPORT_PIPELINE_{n.upper()}": str(tmp_path / n) for n in ("store", "work")})
    return env


def janitor(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "report_pipeline.host_janitor", *args], cwd=REPO,
        env=host_env(tmp_path), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_expired_workdirs_go_with_an_audit_event_and_live_ones_stay(tmp_path: Path):
    workdir, started = dead_workdir(tmp_path / "work"), utc_now()
    hold = PipelineSettings(tmp_path / "work").retention.unfinished_hold

    early = janitor(tmp_path, "--once", "--now", iso(started + timedelta(minutes=5)))
    assert early.returncode == 0, early.stderr[-2000:]
    assert "deleted 0 workdirs" in early.stdout and workdir.exists()  # its lease is live

    late = started + hold + timedelta(minutes=1)
    done = janitor(tmp_path, "--once", "--now", iso(late))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "host janitor: deleted 1 workdir," in done.stdout
    assert not workdir.exists()
    [event] = deletion_log.read(LocalStore(tmp_path / "store"), late - timedelta(days=1))
    assert (event.kind, event.item) == ("workdir", workdir.name)
    assert event.bytes >= 1000  # the page and the lease file
    assert str(tmp_path) not in done.stdout + done.stderr  # no paths in what it prints


STARTER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-m", "report_pipeline.host_janitor", "--every", "0.2"])
print(child.pid, flush=True)
time.sleep(120)
"""


def test_the_janitor_exits_when_the_worker_that_started_it_is_killed(tmp_path: Path):
    worker = subprocess.Popen(
        [sys.executable, "-c", STARTER], cwd=REPO, env=host_env(tmp_path),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    child = int(worker.stdout.readline())
    time.sleep(1.0)  # a sweep or two
    assert _alive(child)
    worker.send_signal(signal.SIGKILL)
    worker.wait(10)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the host janitor outlived its worker"


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):  # not our child: init reaps it
        os.waitpid(pid, os.WNOHANG)
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False

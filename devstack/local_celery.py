"""Redis and Celery workers for one machine (the Celery tests and `bench.celery`): a throwaway
`redis-server` on a free loopback port with no persistence, and worker processes
(`report_pipeline.celery_worker`) each with its own working directory, DAGSTER_HOME and work
root, stopped with their process group. Not Dagster, not core: plain Python.

A Redis may already listen on 6379 for someone else: this never uses it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from devstack.loopback import free_port

REPO = Path(__file__).resolve().parents[1]
PRODUCTION_YAML = REPO / "deploy" / "production" / "dagster.yaml"


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass(frozen=True)
class Redis:
    port: int

    def url(self, database: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{database}"

    @property
    def env(self) -> dict[str, str]:
        """The broker (database 0) and result backend (1), as the executor and workers read
        them (defs/deployment/celery_executor.py)."""
        return {
            "REPORT_PIPELINE_CELERY_BROKER": self.url(0),
            "REPORT_PIPELINE_CELERY_BACKEND": self.url(1),
        }


@contextmanager
def redis_server(timeout: float = 30.0, attempts: int = 3) -> Iterator[Redis]:
    """`redis-server` (Debian: redis-server) on a free loopback port, nothing saved to disk;
    stopped at the end with everything it held."""
    exe = shutil.which("redis-server")
    if not exe:
        raise RuntimeError("redis-server not found: install it (Debian: redis-server)")
    folder = Path(tempfile.mkdtemp(prefix="report_pipeline-redis-"))
    try:
        for _ in range(attempts):
            port = free_port()
            command = [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                       "--appendonly", "no", "--dir", str(folder), "--daemonize", "no",
                       "--logfile", str(folder / "redis.log")]  # fmt: skip
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            process = subprocess.Popen(command, start_new_session=True, **quiet)
            deadline = time.monotonic() + timeout
            while process.poll() is None and not _ping(port) and time.monotonic() < deadline:
                time.sleep(0.05)
            if process.poll() is None and _ping(port):
                try:
                    yield Redis(port)
                finally:
                    _stop(process)
                return
            _stop(process)  # the port was taken in the meantime, or it did not start
        log = (folder / "redis.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"redis-server did not start:\n{log}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM to the process group, SIGKILL after `grace` seconds."""
    if process.poll() is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@dataclass
class Worker:
    """One Celery worker process (and its pool), as on its own host: its own folder holding
    its working directory (`cwd/`), DAGSTER_HOME (`home/`, a copy of the production instance
    file) and work root (`work/`)."""

    name: str
    root: Path
    process: subprocess.Popen | None = None
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.root / "worker.log"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def start(self, env: Mapping[str, str], command: list[str] | None = None) -> None:
        """Start `python -m report_pipeline.celery_worker --name NAME` (or `command`, which
        gets `--name NAME` appended) in its own session, with only `env` plus its own
        DAGSTER_HOME, REPORT_PIPELINE_WORK and TMPDIR."""
        for folder in (self.home, self.cwd, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PRODUCTION_YAML, self.home / "dagster.yaml")
        own = {"DAGSTER_HOME": str(self.home), "REPORT_PIPELINE_WORK": str(self.work),
               "TMPDIR": str(self.tmp)}  # fmt: skip
        command = command or [sys.executable, "-m", "report_pipeline.celery_worker"]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [*command, "--name", self.name], cwd=self.cwd, env={**env, **own},
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def kill(self) -> None:
        """SIGKILL to the whole worker (main process, pool, decoders): a lost host."""
        assert self.process is not None
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def wait_until(condition: Callable[[], object], what: str, timeout: float, poll=0.1) -> object:
    """`condition()`'s first truthy value, checked every `poll` seconds, or TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:.0f} s for {what}")
        time.sleep(poll)


def ready_workers(broker: str, timeout: float = 1.0) -> set[str]:
    """Names (`name@host`) of the workers answering a ping on `broker`."""
    from celery import Celery

    app = Celery("ping", broker=broker)
    try:
        return {name for reply in app.control.ping(timeout=timeout) for name in reply}
    finally:
        app.close()


@contextmanager
def workers(
    root: Path, names: list[str], env: Mapping[str, str], broker: str,
    command: list[str] | None = None, timeout: float = 90.0,
    own_env: Mapping[str, Mapping[str, str]] | None = None,
) -> Iterator[list[Worker]]:  # fmt: skip
    """Start one worker per name under `root/<name>/` (`own_env[name]` on top of `env`), wait
    until each answers a ping, and stop them all at the end."""
    started = [Worker(name, root / name) for name in names]
    try:
        for worker in started:
            worker.start({**env, **(own_env or {}).get(worker.name, {})}, command)

        def all_ready() -> bool:
            for worker in started:
                if worker.process.poll() is not None:
                    raise RuntimeError(f"worker {worker.name} exited:\n{worker.tail()}")
            answering = {name.split("@")[0] for name in ready_workers(broker)}
            return answering >= set(names)

        wait_until(all_ready, f"workers {names} to answer", timeout, poll=0.5)
        yield started
    finally:
        for worker in started:
            worker.stop()

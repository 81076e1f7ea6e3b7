"""PostgreSQL for one machine (`make demo-production`, `make dev-production`, the tests): the
server at 127.0.0.1:5432 when it answers, or a throwaway one (`initdb` + `pg_ctl` into a temporary
folder, a free loopback port, trust auth, fsync off) that is stopped and deleted at the end.

PostgreSQL refuses to run as root: as root, the throwaway server runs as the `postgres` user
(else `nobody`), with its folder handed over to that user. Not Dagster, not core: plain Python.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psycopg2

from devstack.loopback import free_port

SHARED = ("127.0.0.1", 5432)


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    user: str
    throwaway: bool = False
    folder: Path | None = None  # the throwaway server's data, socket and log

    def url(self, database: str = "postgres") -> str:
        """A SQLAlchemy URL naming psycopg2 (a bare postgresql:// wants psycopg 3)."""
        return f"postgresql+psycopg2://{self.user}@{self.host}:{self.port}/{database}"

    def execute(self, sql: str, database: str = "postgres") -> tuple | None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE need that); its first
        row, if it returns any."""
        connection = psycopg2.connect(
            host=self.host, port=self.port, user=self.user, dbname=database, connect_timeout=3
        )
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(sql)
                return cursor.fetchone() if cursor.description else None
        finally:
            connection.close()


def answering(host: str, port: int, users: tuple[str, ...] = ("postgres", "root")) -> Server | None:
    """The server at host:port as a user who may create databases, or None (nothing answers,
    or no such user gets in)."""
    for user in users:
        server = Server(host, port, user)
        with suppress(psycopg2.Error):
            row = server.execute(
                "SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = user"
            )
            if row and row[0]:
                return server
    return None


def _bin(name: str) -> str:
    """`name` from PATH, else from the newest /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    if not found:
        raise RuntimeError(f"{name} not found: install the PostgreSQL server (Debian: postgresql)")
    return str(Path(found).resolve())


def _run_as() -> dict:
    """subprocess arguments that drop root for PostgreSQL's tools (nothing when not root)."""
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        with suppress(KeyError):
            entry = pwd.getpwnam(name)
            return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    raise RuntimeError("running as root and there is no postgres or nobody user to run as")


def _pg(args: list[str], folder: Path, drop: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=folder, capture_output=True, text=True, check=False, timeout=120, **drop
    )


@contextmanager
def throwaway_server() -> Iterator[Server]:
    """A new server on a free loopback port; stopped and its folder deleted at the end."""
    folder, drop = Path(tempfile.mkdtemp(prefix="report_pipeline-pg-")), _run_as()
    if drop:
        os.chown(folder, drop["user"], drop["group"])
    data, log = folder / "data", folder / "server.log"
    try:
        init = [_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8"]
        done = _pg([*init, "--no-sync"], folder, drop)
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()[-2000:]}")
        server = _start(data, log, folder, drop)
        try:
            yield server
        finally:
            _pg([_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], folder, drop)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _start(data: Path, log: Path, folder: Path, drop: dict, attempts: int = 3) -> Server:
    """pg_ctl start on a free port (another one if that port was taken in the meantime)."""
    for _ in range(attempts):
        port = free_port()
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
        start = [_bin("pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"]
        if _pg(start, folder, drop).returncode == 0:
            return Server("127.0.0.1", port, "postgres", throwaway=True, folder=folder)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise RuntimeError(f"the throwaway PostgreSQL server did not start:\n{tail}")


@contextmanager
def local_server(force_throwaway: bool = False, shared: tuple = SHARED) -> Iterator[Server]:
    """The shared server when it answers (and `force_throwaway` is false), else a throwaway."""
    found = None if force_throwaway else answering(*shared)
    if found:
        yield found
    else:
        with throwaway_server() as server:
            yield server


@contextmanager
def fresh_database(server: Server, prefix: str = "report_pipeline") -> Iterator[str]:
    """A new, uniquely named database (its URL); dropped at the end, connections and all."""
    name = f"{prefix}_{time.strftime('%Y%m%d%H%M%S')}_{os.getpid()}_{secrets.token_hex(3)}"
    server.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.url(name)
    finally:
        server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _control(server: Server, *args: str) -> None:
    """pg_ctl on a throwaway server's data folder (the fault tests stop and restart it)."""
    if not server.throwaway or server.folder is None:
        raise RuntimeError("only a throwaway server may be stopped or restarted")
    done = _pg([_bin("pg_ctl"), "-D", str(server.folder / "data"), *args], server.folder, _run_as())
    if done.returncode:
        raise RuntimeError(f"pg_ctl {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")


def restart(server: Server, mode: str = "fast") -> None:
    """`pg_ctl restart -m <mode>`, as a minor upgrade does: every connection is cut, the server
    comes back on the same port (pg_ctl reuses the options it was started with). The log file
    again: without it the new postmaster would hold pg_ctl's output pipe open."""
    _control(server, "-l", str(server.folder / "server.log"), "-m", mode, "-w", "restart")


def stop(server: Server, mode: str = "fast") -> None:
    """`pg_ctl stop -m <mode>`: the server is down until `start`."""
    _control(server, "-m", mode, "-w", "stop")


def start(server: Server) -> None:
    """Start a stopped throwaway server again, on its port."""
    log = str(server.folder / "server.log")
    options = f"-c listen_addresses=127.0.0.1 -p {server.port} -k {server.folder} -c fsync=off"
    _control(server, "-l", log, "-o", options, "-w", "start")

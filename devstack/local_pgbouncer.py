"""PgBouncer in front of a PostgreSQL server on one machine, with the pooling settings of the
committed deploy/production/pgbouncer.ini (`make demo-production`, `make dev-production`,
`bench.production`; a deployment runs its own pooler from the same file).

Why: outside the webserver, dagster-postgres opens a new connection for every event a run writes
(SQLAlchemy `NullPool`, not configurable), ~7-9 ms each here against ~1.6 ms for a write on an
open connection, and a run writes ~67 events. A pooler in session mode keeps the server
connections open between those short client connections. Plain Python, not Dagster, not core.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devstack.local_postgres import Server, _run_as
from devstack.loopback import free_port, wait_accepting

BINARY = ("pgbouncer", "/usr/sbin/pgbouncer")
SETTINGS = Path(__file__).resolve().parent.parent / "deploy" / "production" / "pgbouncer.ini"


def binary() -> str | None:
    """The pgbouncer program (Debian installs it in /usr/sbin), or None."""
    return next((found for name in BINARY if (found := shutil.which(name))), None)


def pooling_settings() -> dict[str, str]:
    """The settings of the committed deploy/production/pgbouncer.ini (a [pgbouncer] fragment)."""
    parser = configparser.ConfigParser(comment_prefixes=(";", "#"), interpolation=None)
    parser.read_string("[pgbouncer]\n" + SETTINGS.read_text())
    return dict(parser["pgbouncer"])


def _config(server: Server, port: int, folder: Path) -> str:
    # the committed file, included as compose.yaml's pooler includes it (a copy in the pooler's
    # own folder: it runs as the postgres user, who may not read the checkout)
    return f"""[databases]
* = host={server.host} port={server.port}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/users.txt
stats_users = {server.user}
logfile = {folder}/pgbouncer.log
pidfile = {folder}/pgbouncer.pid
%include {folder}/pooling.ini
"""


@contextmanager
def pgbouncer(server: Server) -> Iterator[Server]:
    """A PgBouncer (session pooling, trust auth, loopback only, a free port) in front of
    `server`, as a `Server` to build URLs from; stopped and its folder deleted at the end."""
    program = binary()
    if program is None:
        raise RuntimeError("pgbouncer not found: install it (Debian: pgbouncer)")
    folder, drop = Path(tempfile.mkdtemp(prefix="report_pipeline-pgbouncer-")), _run_as()
    try:
        (folder / "users.txt").write_text(f'"{server.user}" ""\n')
        shutil.copyfile(SETTINGS, folder / "pooling.ini")
        port = free_port()
        (folder / "pgbouncer.ini").write_text(_config(server, port, folder))
        if drop:
            for path in (folder, *folder.iterdir()):
                os.chown(path, drop["user"], drop["group"])
        process = subprocess.Popen(
            [program, str(folder / "pgbouncer.ini")], cwd=folder,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **drop,
            start_new_session=True,  # a terminal's Ctrl-C stops Dagster first, then this block
        )  # fmt: skip
        try:
            if not wait_accepting(port, process, 10):
                log = folder / "pgbouncer.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"pgbouncer did not start:\n{tail}")
            yield Server("127.0.0.1", port, server.user, folder=folder)
        finally:
            process.terminate()
            process.wait(timeout=10)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

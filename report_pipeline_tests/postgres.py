"""A fresh PostgreSQL database for the tests, which never skip for lack of a server: the server
at 127.0.0.1:5432 when it answers (a new, uniquely named database, dropped at the end), else a
throwaway server (initdb + pg_ctl into a temporary folder, a free port) stopped at the end.
REPORT_PIPELINE_TEST_POSTGRES=throwaway forces the throwaway server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devstack.local_postgres import Server, fresh_database, local_server

FORCE_ENV = "REPORT_PIPELINE_TEST_POSTGRES"
REPO = Path(__file__).resolve().parents[1]
PRODUCTION_YAML = REPO / "deploy" / "production" / "dagster.yaml"


@dataclass(frozen=True)
class Database:
    server: Server
    url: str  # postgresql+psycopg2://…/<name>: what DAGSTER_PG_URL holds

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[1]

    def execute(self, sql: str) -> tuple | None:
        return self.server.execute(sql, self.name)


@contextmanager
def test_database(force_throwaway: bool | None = None) -> Iterator[Database]:
    if force_throwaway is None:
        force_throwaway = os.environ.get(FORCE_ENV) == "throwaway"
    with local_server(force_throwaway) as server, fresh_database(server, "rp_test") as url:
        yield Database(server, url)


test_database.__test__ = False  # a helper, not a test, whatever its name


def production_home(folder: Path, extra: str = "") -> Path:
    """A DAGSTER_HOME holding the committed production dagster.yaml (plus `extra` YAML)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PRODUCTION_YAML, folder / "dagster.yaml")
    if extra:
        with open(folder / "dagster.yaml", "a") as config:
            config.write("\n" + extra)
    return folder

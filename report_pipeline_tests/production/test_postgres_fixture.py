"""The Postgres fixture's two paths: a fresh database on the server at 127.0.0.1:5432 when it
answers, a throwaway server when it does not (forced here), and nothing left behind."""

from __future__ import annotations

import os

import psycopg2
import pytest

from devstack.local_postgres import SHARED, answering, local_server
from report_pipeline_tests.postgres import FORCE_ENV, Database, test_database

pytestmark = pytest.mark.live


def test_the_session_database_is_new_and_uniquely_named(postgres: Database):
    assert postgres.execute("SELECT current_database()") == (postgres.name,)
    assert postgres.name.startswith("rp_test_") and postgres.url.startswith(
        "postgresql+psycopg2://"
    )
    # The shared server whenever it answers; a throwaway one when it does not (or is forced).
    forced = os.environ.get(FORCE_ENV) == "throwaway"
    assert postgres.server.throwaway == (forced or answering(*SHARED) is None)


def test_without_a_server_a_throwaway_one_is_started_used_and_removed():
    with test_database(force_throwaway=True) as database:
        server = database.server
        assert server.throwaway and server.port != SHARED[1] and (server.folder / "data").is_dir()
        assert database.execute("SELECT current_database()") == (database.name,)
        # The other path, on this server: it answers, so a fresh database goes onto it.
        with local_server(shared=(server.host, server.port)) as found:
            assert not found.throwaway and found.port == server.port
    assert not server.folder.exists()
    with pytest.raises(psycopg2.OperationalError):
        server.execute("SELECT 1")


def test_a_fresh_database_is_dropped_at_the_end(postgres: Database):
    with test_database() as database:
        name = database.name
        assert name != postgres.name
    listed = postgres.execute(f"SELECT count(*) FROM pg_database WHERE datname = '{name}'")
    assert listed == (0,) or database.server.throwaway  # a throwaway server is gone entirely

"""The production benchmark's pooler (devstack/local_pgbouncer.py): a Dagster instance on
Postgres works through PgBouncer, and the pooler keeps server connections open across the
client connections dagster-postgres opens and closes for each event it writes."""

from __future__ import annotations

import dagster as dg
import psycopg2
import pytest
import yaml

from devstack.local_pgbouncer import pgbouncer, pooling_settings
from report_pipeline_tests.postgres import test_database

pytestmark = pytest.mark.live


@dg.op
def count_to_three(context) -> int:
    for n in range(3):
        context.log.info(f"counted {n + 1}")
    return 3


@dg.job
def tiny_job():
    count_to_three()


def _backends(database) -> int:
    row = database.server.execute(
        f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{database.name}'"
    )
    return int(row[0])


def test_a_dagster_instance_writes_its_events_through_pgbouncer(tmp_path):
    with test_database() as database, pgbouncer(database.server) as pooler:
        url = pooler.url(database.name)
        config = {"storage": {"postgres": {"postgres_url": url}}}
        (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config))
        with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
            result = tiny_job.execute_in_process(instance=instance)
            assert result.success
            logs = instance.all_logs(result.run_id)
            assert sum("counted" in (e.user_message or "") for e in logs) == 3
            # dagster-postgres closed each of its client connections; the pooler kept the
            # server side open for the next one
            assert _backends(database) >= 1
        connection = psycopg2.connect(
            host=pooler.host, port=pooler.port, user=pooler.user, dbname=database.name
        )
        connection.close()


def test_the_local_pooler_runs_the_committed_pooling_settings(tmp_path):
    """deploy/production/pgbouncer.ini is what demo-production, dev-production and the benchmark
    run: its settings reach the running pooler (SHOW CONFIG on the admin console)."""
    settings = pooling_settings()
    assert settings["pool_mode"] == "session"
    with test_database() as database, pgbouncer(database.server) as pooler:
        connection = psycopg2.connect(
            host=pooler.host, port=pooler.port, user=pooler.user, dbname="pgbouncer"
        )
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("SHOW CONFIG")
            running = {row[0]: row[1] for row in cursor.fetchall()}
        connection.close()
    for key, value in settings.items():
        assert running[key] == value, key

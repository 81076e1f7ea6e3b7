"""`make demo-production` as a user runs it without DAGSTER_PG_URL: a throwaway Postgres is
started and announced, the demo succeeds on the production instance, and nothing is left running.
(The inbox, store and work roots go to a temporary folder; DAGSTER_HOME is var/production/.)"""

from __future__ import annotations

import glob
import os
import subprocess
import tempfile
from pathlib import Path

from report_pipeline_tests.postgres import REPO

THROWAWAYS = f"{tempfile.gettempdir()}/report_pipeline-pg-*"  # local_postgres.throwaway_server


def test_make_demo_production_starts_a_throwaway_postgres_and_succeeds(tmp_path: Path):
    before = set(glob.glob(THROWAWAYS))
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_PG_URL", "DAGSTER_HOME")}
    env.update(
        {f"REPORT_PIPELINE_{n.upper()}": str(tmp_path / n) for n in ("inbox", "store", "work")}
    )
    done = subprocess.run(
        ["make", "--no-print-directory", "demo-production"], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "DAGSTER_PG_URL is not set: started a throwaway PostgreSQL server" in done.stdout
    assert "succeeded." in done.stdout and "state complete" in done.stdout
    assert "make dev-production" in done.stdout
    assert set(glob.glob(THROWAWAYS)) <= before  # stopped and deleted

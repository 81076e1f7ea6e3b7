"""`make demo-production` as a user runs it without DAGSTER_PG_URL or an S3 bucket: a throwaway
Postgres and a local S3 server (moto) are started and announced, the demo succeeds on the
production instance with the store on S3, and nothing is left running. (The inbox and work roots
go to a temporary folder; DAGSTER_HOME is var/production/.)"""

from __future__ import annotations

import glob
import os
import re
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from report_pipeline_tests.postgres import REPO

pytestmark = pytest.mark.live

THROWAWAYS = f"{tempfile.gettempdir()}/report_pipeline-pg-*"  # local_postgres.throwaway_server


def test_make_demo_production_starts_a_throwaway_postgres_and_succeeds(tmp_path: Path):
    before = set(glob.glob(THROWAWAYS))
    unset = ("DAGSTER_PG_URL", "DAGSTER_HOME", "REPORT_PIPELINE_S3_BUCKET", "AWS_ENDPOINT_URL")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(
        {f"REPORT_PIPELINE_{n.upper()}": str(tmp_path / n) for n in ("inbox", "store", "work")}
    )
    done = subprocess.run(
        ["make", "--no-print-directory", "demo-production"], cwd=REPO, env=env,
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "DAGSTER_PG_URL is not set: started a throwaway PostgreSQL server" in done.stdout
    # .ci/system-packages installs pgbouncer, so the demo runs through the committed pooler file
    pooled = re.search(r"PgBouncer in front of it at ([\d.]+):(\d+), with the pooling", done.stdout)
    assert pooled, done.stdout[-3000:]
    assert "succeeded." in done.stdout and "state complete" in done.stdout
    assert "make dev-production" in done.stdout
    assert set(glob.glob(THROWAWAYS)) <= before  # stopped and deleted
    started = re.search(
        r"started a local S3 API server \(moto\) .* at http://([\d.]+):(\d+)", done.stdout
    )
    assert started, done.stdout[-3000:]
    assert "manifest              s3://report-pipeline/archive/inbox-" in done.stdout
    # the sample went into the S3 inbox, not the local folder
    assert "Sample report: s3://report-pipeline-inbox/2026-10/monthly_report.pdf" in done.stdout
    assert not (tmp_path / "inbox").exists()
    for host, port in (started.groups(), pooled.groups()):  # the S3 server and pooler stopped
        with socket.socket() as probe:
            assert probe.connect_ex((host, int(port))) != 0

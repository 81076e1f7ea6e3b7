"""`make demo-production` and `make dev-production`: the demo or `dagster dev` on the production
configuration (deploy/production/dagster.yaml, REPORT_PIPELINE_DEPLOYMENT=production) on one
machine. Postgres comes from DAGSTER_PG_URL when it is set, S3 from REPORT_PIPELINE_S3_BUCKET
(with AWS_ENDPOINT_URL or AWS); otherwise a throwaway PostgreSQL server and a local S3 API
server (moto, dev dependency group) are started for the purpose (and said so), and stopped, with
their data, when the command ends. The throwaway server is reached through PgBouncer with the
committed deploy/production/pgbouncer.ini when Debian's pgbouncer is installed, as a deployment
should run it.

DAGSTER_HOME is var/production/dagster_home (git-ignored), holding a fresh copy of the
committed dagster.yaml each time. The store, op outputs and compute logs are in the bucket. The
inbox is an S3 bucket too (the local server's second bucket, or REPORT_PIPELINE_INBOX_BUCKET when
set; with a bucket of your own and no inbox bucket, the local inbox folder). The work root stays
local: it is each worker host's private scratch.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INSTANCE_YAML = REPO / "deploy" / "production" / "dagster.yaml"
HOME = Path("var/production/dagster_home")


def redacted(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


@contextmanager
def postgres_url() -> Iterator[str]:
    """DAGSTER_PG_URL, or a throwaway server's URL for as long as the block runs."""
    if url := os.environ.get("DAGSTER_PG_URL"):
        print(f"Postgres: {redacted(url)} (DAGSTER_PG_URL)", flush=True)
        yield url
        return
    from devstack import local_pgbouncer
    from devstack.local_postgres import throwaway_server

    with throwaway_server() as server:
        print(
            f"DAGSTER_PG_URL is not set: started a throwaway PostgreSQL server for this command "
            f"at {server.host}:{server.port} (data in {server.folder}); it is stopped and "
            "deleted when the command ends. Set DAGSTER_PG_URL to keep runs.",
            flush=True,
        )
        if local_pgbouncer.binary() is None:
            print("PgBouncer not found (Debian: pgbouncer): Dagster talks to it directly.")
            yield server.url("postgres")
            return
        with local_pgbouncer.pgbouncer(server) as pooler:
            print(
                f"PgBouncer in front of it at {pooler.host}:{pooler.port}, with the pooling "
                "settings of deploy/production/pgbouncer.ini, as a deployment would run it.",
                flush=True,
            )
            yield pooler.url("postgres")


LOCAL_BUCKET = "report-pipeline"
LOCAL_INBOX_BUCKET = "report-pipeline-inbox"  # the primary report source, as a team would have it
# Set in the commands' environment with the local S3 server: its endpoint and dummy credentials
# replace any the machine has (a profile or real keys must not reach it, nor it them).
AWS_CLEARED = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "REPORT_PIPELINE_S3_ENDPOINT",
               "REPORT_PIPELINE_S3_PREFIX", "REPORT_PIPELINE_INBOX_BUCKET")  # fmt: skip


@contextmanager
def s3_env() -> Iterator[dict[str, str]]:
    """The environment's S3 settings when REPORT_PIPELINE_S3_BUCKET is set, else a local S3
    server's (a private bucket created in it) for as long as the block runs."""
    if bucket := os.environ.get("REPORT_PIPELINE_S3_BUCKET"):
        endpoint = os.environ.get("REPORT_PIPELINE_S3_ENDPOINT") or os.environ.get(
            "AWS_ENDPOINT_URL", "AWS"
        )
        print(f"S3: bucket {bucket} at {endpoint} (REPORT_PIPELINE_S3_BUCKET)", flush=True)
        yield {}
        return
    from devstack import local_s3

    with local_s3.moto_server() as endpoint:
        client = local_s3.client(endpoint)
        local_s3.private_bucket(client, LOCAL_BUCKET)
        local_s3.private_bucket(client, LOCAL_INBOX_BUCKET)
        print(
            f"REPORT_PIPELINE_S3_BUCKET is not set: started a local S3 API server (moto) for this "
            f"command at {endpoint} with bucket {LOCAL_BUCKET} (store, op outputs, compute logs) "
            f"and bucket {LOCAL_INBOX_BUCKET} (the report inbox); it is stopped and its objects "
            "are gone when the command ends. Set REPORT_PIPELINE_S3_BUCKET (and AWS_ENDPOINT_URL "
            "for MinIO) to use a real bucket.",
            flush=True,
        )
        yield {**local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint,
               "REPORT_PIPELINE_S3_BUCKET": LOCAL_BUCKET,
               "REPORT_PIPELINE_INBOX_BUCKET": LOCAL_INBOX_BUCKET}  # fmt: skip


def production_env(url: str, s3: dict[str, str]) -> dict[str, str]:
    HOME.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(INSTANCE_YAML, HOME / "dagster.yaml")
    base = {k: v for k, v in os.environ.items() if not (s3 and k in AWS_CLEARED)}
    return {
        **base,
        **s3,
        "DAGSTER_HOME": str(HOME.resolve()),
        "DAGSTER_PG_URL": url,
        "REPORT_PIPELINE_DEPLOYMENT": "production",
    }


def run(command: list[str], env: dict[str, str]) -> int:
    """The command in the foreground. Ctrl-C reaches it (same process group) and SIGTERM is
    passed on; either way we wait for it to exit before the throwaway server goes."""
    process = subprocess.Popen(command, env=env)
    signal.signal(signal.SIGTERM, lambda *_: process.send_signal(signal.SIGTERM))
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            continue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["demo", "dev"])
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="demo: --month M; dev: flags")
    args = parser.parse_args(argv)
    with postgres_url() as url, s3_env() as s3:
        env = production_env(url, s3)
        print(f"Instance: {INSTANCE_YAML.relative_to(REPO)} in DAGSTER_HOME={env['DAGSTER_HOME']}")
        if args.what == "demo":
            return run([sys.executable, "-m", "report_pipeline.demo", *args.rest], env)
        dagster = str(Path(sys.executable).parent / "dagster")
        return run([dagster, "dev", "-w", str(REPO / "workspace.yaml"), *args.rest], env)


if __name__ == "__main__":
    sys.exit(main())

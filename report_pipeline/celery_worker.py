"""A Celery worker for runs on `REPORT_PIPELINE_EXECUTOR=celery` (see docs/deploy.md):

    uv run python -m report_pipeline.celery_worker --name w1 [--concurrency 1]

The same as `dagster-celery worker start -A dagster_celery.app -y <config> -n w1`, without the
generated config module: the Celery app is built from the configuration the run's executor uses
(defs/deployment/celery_executor.py: broker, result backend, late acknowledgement, the visibility
timeout), read from this process's environment, and the worker consumes dagster-celery's queue.

Each worker host needs what a code server needs, in its own environment: the project installed,
`DAGSTER_HOME` (its own folder holding deploy/production/dagster.yaml: Dagster's local files go
there), `DAGSTER_PG_URL`, `REPORT_PIPELINE_DEPLOYMENT=production`, the S3 variables and its own
`REPORT_PIPELINE_WORK` (decoded report material: encrypted local disk). The instance a step uses
is the run's (its InstanceRef travels with the step); environment variables it names are read
here. The definitions are imported before the pool starts, so a misconfigured worker stops at
once with the reason instead of failing every step it takes, and no step pays the import.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from report_pipeline.defs.deployment import deployment as chosen


def check_environment() -> None:
    """Refuse to start where a step could not run as the code server would run it."""
    if not os.environ.get("DAGSTER_HOME"):
        raise SystemExit("DAGSTER_HOME is not set: give each worker its own folder holding "
                         "deploy/production/dagster.yaml")  # fmt: skip
    executor = os.environ.setdefault(chosen.EXECUTOR_ENV, chosen.CELERY)
    if executor != chosen.CELERY:
        raise SystemExit(f"{chosen.EXECUTOR_ENV}={executor!r}: a Celery worker serves the "
                         "celery executor; set it to celery or leave it unset")  # fmt: skip
    try:
        chosen.executor_name(chosen.deployment())
    except ValueError as error:
        raise SystemExit(str(error)) from None


def make_worker_app():
    """dagster-celery's app and its step task, on the shared configuration."""
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    from report_pipeline.defs.deployment.celery_executor import worker_app_args

    app = make_app(worker_app_args())
    create_task(app)  # registers `execute_plan`, the task each step is sent as
    return app


def main(argv: list[str] | None = None) -> int:
    from report_pipeline.defs.deployment.celery_executor import QUEUE

    parser = argparse.ArgumentParser(prog="python -m report_pipeline.celery_worker")
    parser.add_argument("--name", default="dagster", help="worker name; the host is appended")
    parser.add_argument("--concurrency", type=int, default=1, help="steps at a time (default 1: "
                        "each step already decodes on every core)")  # fmt: skip
    parser.add_argument("--loglevel", default="INFO")
    parser.add_argument("--janitor-every", type=float, default=300.0, help="seconds between "
                        "sweeps of this host's workdirs (report_pipeline/host_janitor.py); "
                        "0: none (another process sweeps them)")  # fmt: skip
    args = parser.parse_args(argv)
    check_environment()
    import report_pipeline.definitions  # noqa: F401  (fails fast; inherited by the pool)

    app = make_worker_app()
    host_janitor = None
    if args.janitor_every > 0:  # this host's workdirs: cleanup_job's step may run elsewhere
        host_janitor = subprocess.Popen(
            [sys.executable, "-m", "report_pipeline.host_janitor", "--every",
             str(args.janitor_every)]
        )  # fmt: skip
    try:
        app.worker_main(
            [
                "worker", "-n", f"{args.name}@%h", "-Q", QUEUE,
                f"--concurrency={args.concurrency}", "--prefetch-multiplier=1",
                f"--loglevel={args.loglevel}", "--without-mingle", "--without-gossip",
            ]
        )  # fmt: skip
    finally:
        if host_janitor is not None:
            host_janitor.terminate()
            host_janitor.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

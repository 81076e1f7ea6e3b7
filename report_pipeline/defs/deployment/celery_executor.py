"""Steps on Celery workers (`REPORT_PIPELINE_EXECUTOR=celery`, production deployment only):
dagster-celery's executor with Redis as broker and result backend, and the one Celery
configuration the run (which submits steps) and the workers (`python -m
report_pipeline.celery_worker`) share.

Imported only when the Celery executor is chosen (dagster_celery and celery cost ~0.3 s of
imports the in-process deployments should not pay).

Environment (read when the definitions load, like REPORT_PIPELINE_DEPLOYMENT; restart the code
location and the workers to change them):
- `REPORT_PIPELINE_CELERY_BROKER` (default `redis://127.0.0.1:6379/0`) and
  `REPORT_PIPELINE_CELERY_BACKEND` (default `redis://127.0.0.1:6379/1`): when set, the executor
  config names the variable (`{"env": ...}`), so the UI shows its name, never a password in
  the URL, and each process reads its own value;
- `REPORT_PIPELINE_CELERY_VISIBILITY_TIMEOUT` (seconds, default 3900): see `config_source()`.
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg

BROKER_ENV = "REPORT_PIPELINE_CELERY_BROKER"
BACKEND_ENV = "REPORT_PIPELINE_CELERY_BACKEND"
VISIBILITY_ENV = "REPORT_PIPELINE_CELERY_VISIBILITY_TIMEOUT"
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
DEFAULT_BACKEND = "redis://127.0.0.1:6379/1"  # the run polls each step's result here
# Longer than the longest step: no step outlives its run, and run monitoring stops any run at
# max_runtime_seconds (3600 s in deploy/production/dagster.yaml, checked every 30 s). A message
# delivered longer ago than this and not acknowledged is handed to another worker, so a shorter
# value would run a long step twice, concurrently.
DEFAULT_VISIBILITY_TIMEOUT = 3900
QUEUE = "dagster"  # dagster-celery's default queue; the workers consume it


def _source(variable: str, default: str) -> Any:
    """`{"env": variable}` when the variable is set now (Dagster reads it where the config is
    used), else the default."""
    return {"env": variable} if os.environ.get(variable) else default


def visibility_timeout() -> int:
    value = os.environ.get(VISIBILITY_ENV) or str(DEFAULT_VISIBILITY_TIMEOUT)
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{VISIBILITY_ENV}={value!r}: expected a whole number of seconds")
    return int(value)


def config_source() -> dict[str, Any]:
    """Celery settings for the run and the workers alike (lowercase Celery names).

    - `task_acks_late`: a step's message is acknowledged when the step has finished, not when a
      worker takes it, so a step whose worker dies is not lost.
    - `task_reject_on_worker_lost`: when the pool process running a step dies (SIGKILL, the
      OOM killer), the message goes back to the queue at once and another worker runs the step.
      Without it Celery records WorkerLostError as the step's result, the run fails and the
      op's RetryPolicy is never consulted (dagster-celery turns a task error into a run error,
      not a step failure). Cost: a step that kills its worker process every time is redelivered
      every time; decoding, the only part that handles hostile bytes, already runs in confined
      child processes whose crash quarantines the image, not the worker.
    - `worker_prefetch_multiplier: 1`: a worker holds one step at a time, so a step waits for
      whichever worker frees up first, not behind a busy one.
    - `broker_transport_options`: replaces dagster-celery's defaults as a whole, so those
      (publish retries) are repeated here. When a whole worker dies (host lost, SIGKILL of the
      worker), its step stays in Redis's unacked set until another worker's periodic sweep finds
      it older than `visibility_timeout` (must exceed the longest step: see
      DEFAULT_VISIBILITY_TIMEOUT). kombu sweeps every `unacked_restore_interval` x
      `unacked_restore_throttle` seconds (10 x 10 by default); throttle 1 and an interval of a
      tenth of the timeout (1 to 10 s) bring the step back within ~1.1 x the timeout.
    """
    timeout = visibility_timeout()
    return {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": {
            "visibility_timeout": timeout,
            "unacked_restore_interval": max(1, min(10, timeout // 10)),
            "unacked_restore_throttle": 1,
            "max_retries": 3,  # dagster-celery's defaults for publishing, kept
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
        "broker_connection_retry_on_startup": True,
    }


def executor_config() -> dict[str, Any]:
    """The executor's config (`execution: {config: ...}` in run-config terms)."""
    return {
        "broker": _source(BROKER_ENV, DEFAULT_BROKER),
        "backend": _source(BACKEND_ENV, DEFAULT_BACKEND),
        "config_source": config_source(),
    }


def worker_app_args() -> dict[str, Any]:
    """The same configuration for a worker's Celery app, with this process's values."""
    return {
        "broker": os.environ.get(BROKER_ENV) or DEFAULT_BROKER,
        "backend": os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND,
        "include": [],
        "config_source": config_source(),
    }


# How often the run polls Redis for finished steps, instead of dagster-celery's hard-coded 1 s
# (what that cost: docs/performance.md, "On Celery workers"). Set when the executor is chosen,
# in the process that runs the loop (defs/deployment/library_seams.py, where its test is).
POLL_SECONDS = 0.2


def celery_executor() -> dg.ExecutorDefinition:
    from dagster_celery import celery_executor as executor  # ~0.3 s: only when chosen

    from report_pipeline.defs.deployment.library_seams import set_celery_poll

    set_celery_poll(POLL_SECONDS)
    return executor.configured(executor_config(), name="celery")

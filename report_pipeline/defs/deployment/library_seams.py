"""The places this project reaches into a pinned library's internals, in one module, each with a
test (report_pipeline_tests/defs/test_library_seams.py) that fails loudly when an upgrade
changes what it relies on:

- dagster-celery's result poll: `core_execution_loop.TICK_SECONDS`, a hard-coded 1 s sleep
  between polls of the broker, read at each sleep (`set_celery_poll`);
- botocore's data loader, shared by every boto3 session of the process, so the S3 service models
  are parsed once, not once per client (`boto3_session`).
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
import botocore.session


def set_celery_poll(seconds: float) -> None:
    """How often dagster-celery's run loop polls for finished steps (its default: 1 s)."""
    from dagster_celery import core_execution_loop

    if not isinstance(getattr(core_execution_loop, "TICK_SECONDS", None), int | float):
        raise RuntimeError(
            "dagster_celery.core_execution_loop.TICK_SECONDS is gone: this dagster-celery polls "
            "some other way; see report_pipeline/defs/deployment/library_seams.py"
        )
    core_execution_loop.TICK_SECONDS = seconds


_loader_lock = threading.Lock()
_loader: Any = None  # botocore's data loader, shared by every client this process makes


def boto3_session(profile_name: str | None) -> boto3.session.Session:
    """A new boto3 session (its own credentials, profile and environment, read now) whose
    botocore data loader is shared by the process: the JSON service models it parses (S3's,
    the endpoint rules) take 0.1-0.3 s per session, once instead of once per client."""
    global _loader
    with _loader_lock:
        core = botocore.session.Session()
        if _loader is None:
            _loader = core.get_component("data_loader")
        core.register_component("data_loader", _loader)
        session = boto3.session.Session(botocore_session=core, profile_name=profile_name)
        # boto3 appends its own data folder to the loader's search path for every session
        _loader.search_paths[:] = list(dict.fromkeys(_loader.search_paths))
    return session


def forget_shared_models() -> None:
    """The next session parses the service models again (the benchmark's fresh-run cost)."""
    global _loader
    with _loader_lock:
        _loader = None

"""What defs/deployment/library_seams.py relies on in its pinned libraries: these fail loudly
when an upgrade changes it."""

import inspect

import pytest
from dagster_celery import core_execution_loop

from report_pipeline.defs.deployment import library_seams


def test_dagster_celery_sleeps_tick_seconds_read_at_each_poll(monkeypatch):
    assert "time.sleep(TICK_SECONDS)" in inspect.getsource(core_execution_loop)
    monkeypatch.setattr(core_execution_loop, "TICK_SECONDS", 1)
    library_seams.set_celery_poll(0.2)
    assert core_execution_loop.TICK_SECONDS == 0.2


def test_a_dagster_celery_without_the_tick_is_refused_by_name(monkeypatch):
    monkeypatch.delattr(core_execution_loop, "TICK_SECONDS")
    with pytest.raises(RuntimeError, match="TICK_SECONDS is gone"):
        library_seams.set_celery_poll(0.2)


def test_boto3_sessions_share_one_data_loader_whose_search_path_stays_short():
    library_seams.forget_shared_models()
    first, second = (library_seams.boto3_session(None) for _ in range(2))
    loaders = [s._session.get_component("data_loader") for s in (first, second)]  # noqa: SLF001
    assert loaders[0] is loaders[1]
    assert len(loaders[0].search_paths) == len(set(loaders[0].search_paths))
    for session in (first, second):
        assert session.client("s3", region_name="us-east-1").meta.service_model.service_name == "s3"

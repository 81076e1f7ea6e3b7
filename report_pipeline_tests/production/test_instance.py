"""deploy/production/dagster.yaml: Postgres storage from DAGSTER_PG_URL, the embedded default's
queue limits, logging, run monitoring and run retries, and no project code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

from report_pipeline_tests.postgres import PRODUCTION_YAML, REPO, production_home

pytestmark = pytest.mark.live

SHARED_SECTIONS = [
    "telemetry", "concurrency", "run_queue", "python_logs", "run_monitoring", "run_retries"
]  # fmt: skip


def test_runs_events_and_schedules_are_stored_in_the_postgres_database(production_instance):
    instance = production_instance
    assert isinstance(instance.run_storage, PostgresRunStorage)
    assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
    assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
    assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
    assert instance.run_monitoring_enabled and instance.run_retries_enabled


def test_queue_limits_monitoring_and_retries_are_the_embedded_defaults():
    production = yaml.safe_load(PRODUCTION_YAML.read_text())
    embedded = yaml.safe_load((REPO / "dagster_home" / "dagster.yaml").read_text())
    for section in SHARED_SECTIONS:
        assert production[section] == embedded[section], section
    assert set(production) == {
        *SHARED_SECTIONS, "storage", "compute_logs", "local_artifact_storage"
    }  # fmt: skip
    assert production["storage"] == {"postgres": {"postgres_url": {"env": "DAGSTER_PG_URL"}}}
    logs = production["compute_logs"]
    assert logs["config"]["bucket"] == {"env": "REPORT_PIPELINE_S3_BUCKET"}
    assert logs["config"]["upload_extra_args"] == {"ServerSideEncryption": "AES256"}


def test_local_files_go_under_each_processs_own_dagster_home(tmp_path: Path, pg_env, monkeypatch):
    """The instance ref a Celery step carries names DAGSTER_HOME, not the orchestrating host's
    folder: each process that builds the instance from the ref puts Dagster's local files
    (artifact storage, compute logs staged before upload) under its own DAGSTER_HOME."""
    orchestrator = production_home(tmp_path / "orchestrator")
    monkeypatch.setenv("DAGSTER_HOME", str(orchestrator))
    ref = dg.DagsterInstance.from_config(str(orchestrator)).get_ref()
    worker = tmp_path / "worker-home"
    worker.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(worker))
    with dg.DagsterInstance.from_ref(ref) as instance:
        assert instance.root_directory == str(worker)
        assert instance.storage_directory() == str(worker / "storage")
        local = instance.compute_log_manager.local_manager  # staged before each upload
        assert local.get_captured_local_path(["run", "compute_logs", "step"], "err").startswith(
            str(worker)
        )
    assert not [p for p in orchestrator.iterdir() if p.name != "dagster.yaml"]


NO_PROJECT = """import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "report_pipeline":
            raise ImportError("the webserver and daemon images do not ship " + name)
sys.meta_path.insert(0, Refuse())
import dagster as dg
with dg.DagsterInstance.from_config(sys.argv[1]) as instance:
    print(type(instance.run_storage).__name__)
"""


def test_the_instance_loads_where_the_project_is_not_installed(tmp_path: Path, pg_env):
    """Webserver and daemon images do not ship report_pipeline: the instance loads with every
    import of it refused, and each module it names is Dagster's."""
    home = production_home(tmp_path / "home")
    probe = [sys.executable, "-c", NO_PROJECT, str(home)]
    done = subprocess.run(probe, capture_output=True, text=True, env=os.environ, check=False)
    assert done.stdout.strip() == "PostgresRunStorage", done.stderr[-2000:]
    text = PRODUCTION_YAML.read_text()
    lines = [line for line in text.splitlines() if "module:" in line]
    modules = [line.split("module:")[1].split()[0] for line in lines]
    assert modules and all(m.split(".")[0] in ("dagster", "dagster_aws") for m in modules), modules


def test_compute_logs_go_to_the_bucket_from_the_environment_only(
    tmp_path: Path, pg_env, monkeypatch
):
    """Loading the instance makes no S3 call; the bucket and endpoint are the environment's."""
    monkeypatch.setenv("REPORT_PIPELINE_S3_BUCKET", "reports-private")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    home = production_home(tmp_path / "home")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        manager = instance.compute_log_manager
        assert type(manager).__name__ == "S3ComputeLogManager"
        assert manager._s3_bucket == "reports-private"  # noqa: SLF001 (the test reads config)
        assert manager._s3_session.meta.endpoint_url == "http://127.0.0.1:9"  # noqa: SLF001
        assert manager._upload_extra_args == {"ServerSideEncryption": "AES256"}  # noqa: SLF001

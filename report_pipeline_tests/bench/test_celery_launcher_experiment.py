"""The celery_launcher experiment's instance (bench/experiments/celery_launcher.py): the committed
dagster_home/dagster.yaml plus its `run_launcher:` block loads, with dagster-celery's
CeleryRunLauncher on the given broker and backend, and keeps run monitoring (the launcher checks
a worker's health through the result backend). The dagster dev part runs by hand."""

import shutil

import dagster as dg
import pytest

from bench.backfill import EMBEDDED
from bench.experiments.celery_launcher import LAUNCHER

pytestmark = pytest.mark.live  # every bench test is (conftest.LIVE_FOLDERS)


def test_the_experiment_instance_launches_runs_on_celery(tmp_path):
    shutil.copyfile(EMBEDDED, tmp_path / "dagster.yaml")
    broker, backend = "redis://127.0.0.1:1/0", "redis://127.0.0.1:1/1"  # never connected to
    with open(tmp_path / "dagster.yaml", "a") as yaml:
        yaml.write(LAUNCHER.format(broker=broker, backend=backend))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        launcher = instance.run_launcher
        assert type(launcher).__name__ == "CeleryRunLauncher"
        assert (launcher.broker, launcher.backend) == (broker, backend)
        assert launcher.supports_check_run_worker_health
        assert instance.run_monitoring_enabled

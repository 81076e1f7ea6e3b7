"""The Kubernetes path, configured but not run here (no cluster, no helm, no chart schema): the
definitions load with dagster-k8s's k8s_job_executor; deploy/k8s/values.yaml, as the chart would
render it (k8s_chart.py), passes Dagster's and dagster-k8s's own validation (the instance on a
real Postgres, the K8sRunLauncher's config schema, the executor's config schema). The pods it
would start: test_k8s_pods.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_k8s import K8sRunLauncher
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage
from kubernetes.utils import parse_quantity

from report_pipeline.definitions import build_defs
from report_pipeline.defs.deployment import k8s_executor
from report_pipeline_tests.postgres import PRODUCTION_YAML
from report_pipeline_tests.production import k8s_chart as chart

pytestmark = pytest.mark.live

PROBE = """import dagster as dg
from report_pipeline.definitions import defs
job = defs.resolve_job_def("extract_report_job")
execution = dg.validate_run_config(job)["execution"]
print(defs.executor.name, job.executor_def.name, *sorted(execution["k8s"]))"""
PRODUCTION = {"REPORT_PIPELINE_DEPLOYMENT": "production", "REPORT_PIPELINE_S3_BUCKET": "b"}


def _load(env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "REPORT_PIPELINE_EXECUTOR": "k8s", **env}
    return subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)


def test_the_k8s_executor_loads_in_production_and_is_refused_elsewhere():
    done = _load(PRODUCTION)
    assert done.stdout.split()[:2] == ["k8s", "k8s"], done.stderr[-2000:]
    assert {"max_concurrent", "per_step_k8s_config", "step_k8s_config"} <= set(done.stdout.split())
    for deployment in ("", "local"):
        done = _load({"REPORT_PIPELINE_DEPLOYMENT": deployment})
        assert done.returncode != 0
        assert "REPORT_PIPELINE_EXECUTOR=k8s needs REPORT_PIPELINE_DEPLOYMENT=production" in (
            done.stderr
        ), done.stderr[-2000:]


@pytest.fixture
def k8s_defs(monkeypatch) -> dg.Definitions:
    monkeypatch.setenv("REPORT_PIPELINE_EXECUTOR", "k8s")
    monkeypatch.setenv("REPORT_PIPELINE_S3_BUCKET", "report-pipeline-private")  # read per run
    return build_defs("production")


def _executor_config(defs: dg.Definitions) -> dict:
    """The executor's config as Dagster resolves it for a run (validated against
    k8s_job_executor's schema: step_k8s_config and per_step_k8s_config are dagster-k8s's
    USER_DEFINED_K8S_JOB_CONFIG_SCHEMA, the one `dagster-k8s/config` tags are parsed with)."""
    job = defs.resolve_job_def("extract_report_job")
    return dg.validate_run_config(job)["execution"]["k8s"]


def test_step_pods_are_sized_per_op_and_decoders_per_pod(k8s_defs):
    config = _executor_config(k8s_defs)
    ops = {op.name for op in k8s_defs.resolve_job_def("extract_report_job").all_node_defs}
    assert set(config["per_step_k8s_config"]) <= ops  # keys are op names, or they never apply
    settings = dg.validate_run_config(k8s_defs.resolve_job_def("extract_report_job"))
    worker = settings["resources"]["settings"]["config"]
    assert worker["decoders"] == k8s_executor.STEP_CPUS and worker["target_task_units"] == 3000
    decoding = config["per_step_k8s_config"]["extract_pages"]["container_config"]["resources"]
    assert parse_quantity(decoding["requests"]["cpu"]) == worker["decoders"]
    ceilings = worker["decoders"] * worker["decoder_memory_mib"] * 2**20
    assert parse_quantity(decoding["limits"]["memory"]) >= ceilings + 2**30  # + the step itself
    assert "cpu" not in decoding["limits"]  # throttling would stretch decode timeouts


def test_the_values_run_launcher_is_valid_k8s_run_launcher_config():
    rendered = chart.launcher_config(chart.load_values())
    config = chart.validated(K8sRunLauncher.config_type(), rendered)
    assert config["run_k8s_config"]["container_config"]["resources"]["limits"] == {"memory": "2Gi"}
    assert config["postgres_password_secret"] == "report-pipeline-postgresql"
    with pytest.raises(dg.DagsterInvalidConfigError, match="run_k8s_cfg"):
        chart.validated(K8sRunLauncher.config_type(), {**rendered, "run_k8s_cfg": {}})


def _home(tmp_path: Path, instance_yaml: dict, postgres, monkeypatch) -> str:
    """A DAGSTER_HOME holding the rendered dagster.yaml, its Postgres address (a cluster-internal
    name in the values) pointed at this test's server; the password from the environment, as the
    chart's Secret provides it (trust authentication here: any value)."""
    db = instance_yaml["run_storage"]["config"]["postgres_db"]  # one block for all three
    server = postgres.server
    db.update(hostname=server.host, port=server.port, username=server.user, db_name=postgres.name)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(instance_yaml))
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "unused-with-trust-auth")
    return str(home)


def test_the_instance_the_chart_renders_loads_on_postgres(tmp_path: Path, postgres, monkeypatch):
    """The rendered dagster.yaml: Dagster validates the whole file against its instance schema
    and each storage's config, connects and queries. Queue limits, logging, monitoring and
    retries are production's."""
    instance_yaml = chart.render_instance(chart.load_values())
    home = _home(tmp_path, instance_yaml, postgres, monkeypatch)
    with dg.DagsterInstance.from_config(home) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        assert instance.get_runs() == []  # a query on the database
        assert type(instance.scheduler).__name__ == "DagsterDaemonScheduler"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        logs = instance.compute_log_manager
        assert type(logs).__name__ == "S3ComputeLogManager"
        assert logs._upload_extra_args == {"ServerSideEncryption": "AES256"}  # noqa: SLF001
        assert instance.run_monitoring_enabled and instance.run_retries_enabled
        assert instance.get_ref().run_launcher_data.class_name == "K8sRunLauncher"
    production = yaml.safe_load(PRODUCTION_YAML.read_text())
    shared = ("concurrency", "run_queue", "python_logs", "run_monitoring", "run_retries",
              "telemetry")  # fmt: skip
    for section in shared:
        assert instance_yaml[section] == production[section], section
    assert instance_yaml["compute_logs"]["config"]["prefix"] == "dagster/compute_logs"


def test_the_charts_default_postgres_scheme_would_not_connect(tmp_path, postgres, monkeypatch):
    """Why the values name `postgresql+psycopg2`: without a scheme dagster-postgres builds a
    bare postgresql:// URL, and SQLAlchemy 2.1 looks for psycopg 3, which is not installed."""
    instance_yaml = chart.render_instance(chart.load_values())
    del instance_yaml["run_storage"]["config"]["postgres_db"]["scheme"]
    home = _home(tmp_path, instance_yaml, postgres, monkeypatch)
    with pytest.raises(ModuleNotFoundError, match="psycopg"):
        dg.DagsterInstance.from_config(home).get_runs()

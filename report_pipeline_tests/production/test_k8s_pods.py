"""Run and step pods as dagster-k8s would build them from deploy/k8s/values.yaml (rendered as
the chart would: k8s_chart.py) and the k8s_job_executor's config, without a cluster: the
K8sRunLauncher and construct_dagster_k8s_job build each Job, and the kubernetes client's models
accept it. Resources, the work volume, the secrets and the environment are the ones intended."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from dagster_k8s import K8sRunLauncher, construct_dagster_k8s_job
from dagster_k8s.container_context import K8sContainerContext
from dagster_k8s.job import UserDefinedDagsterK8sConfig, get_user_defined_k8s_config
from dagster_k8s.models import k8s_model_from_dict, k8s_snake_case_dict
from kubernetes.client import ApiClient, V1Job

from report_pipeline.definitions import build_defs
from report_pipeline.defs.deployment import k8s_executor
from report_pipeline_tests.production import k8s_chart as chart

pytestmark = pytest.mark.live


@pytest.fixture
def executor_config(monkeypatch) -> dict:
    """The k8s executor's config as Dagster resolves it for a run of the production definitions."""
    monkeypatch.setenv("REPORT_PIPELINE_EXECUTOR", "k8s")
    monkeypatch.setenv("REPORT_PIPELINE_S3_BUCKET", "report-pipeline-private")
    job = build_defs("production").resolve_job_def("extract_report_job")
    return dg.validate_run_config(job)["execution"]["k8s"]


def _launcher(tmp_path: Path) -> K8sRunLauncher:
    """The K8sRunLauncher the rendered instance names, built as Dagster would, except that it
    reads a kubeconfig naming an unused loopback address instead of the in-cluster one (neither
    is contacted: building the launcher and its pods makes no API call)."""
    kubeconfig = tmp_path / "kubeconfig"
    cluster = {"server": "https://127.0.0.1:9"}
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "none",
        "clusters": [{"name": "none", "cluster": cluster}], "users": [{"name": "none", "user": {}}],
        "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
    }))  # fmt: skip
    config = chart.validated(
        K8sRunLauncher.config_type(), chart.launcher_config(chart.load_values())
    )
    config.update(load_incluster_config=False, kubeconfig_file=str(kubeconfig))
    return K8sRunLauncher(**config)


def _pod(launcher: K8sRunLauncher, context: K8sContainerContext, name: str) -> dict:
    """The Job dagster-k8s would submit (construct_dagster_k8s_job, as the launcher and the
    executor call it), rebuilt from its JSON through the kubernetes client's models."""
    image = "registry.example.internal/report-pipeline-code:0.1.0"
    job = construct_dagster_k8s_job(
        job_config=context.get_k8s_job_config(image, launcher), args=["dagster", "api"],
        job_name=name, user_defined_k8s_config=context.run_k8s_config, component="step_worker",
    )  # fmt: skip
    body = ApiClient().sanitize_for_serialization(job)
    parsed = k8s_snake_case_dict(V1Job, json.loads(json.dumps(body)))  # refuses unknown keys
    assert isinstance(k8s_model_from_dict(V1Job, parsed), V1Job)
    return body["spec"]["template"]["spec"]


def test_run_and_step_pods_carry_the_resources_volumes_and_secrets(tmp_path: Path, executor_config):
    """Run pod: the launcher's context, then the code location's (includeConfigInLaunchedRuns),
    as K8sContainerContext.create_for_run merges them; step pods: then the executor's config
    and the op's override, as the k8s_job_executor's step handler merges them."""
    values, launcher = chart.load_values(), _launcher(tmp_path)
    run_context = K8sContainerContext.create_for_run(
        dg.DagsterRun(job_name="extract_report_job"), launcher, include_run_tags=False
    ).merge(K8sContainerContext.create_from_config(chart.code_location_context(values)))
    config = executor_config
    steps = {
        op: run_context.merge(
            K8sContainerContext(
                run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(config["step_k8s_config"])
            )
        ).merge(K8sContainerContext(run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(
            config["per_step_k8s_config"].get(op, {}))))
        for op in ("stage_report", "extract_pages")
    }  # fmt: skip
    deployment = chart.user_deployment(values)
    work = deployment["env"]["REPORT_PIPELINE_WORK"]
    per_run = values["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]["containerConfig"]
    # The code server's own resources reach its runs too, merged after the launcher's: equal.
    assert deployment["resources"] == per_run["resources"]
    expected = {
        "run": per_run["resources"],
        "stage_report": k8s_executor.LIGHT,
        "extract_pages": k8s_executor.DECODING,
    }
    for name, context in [("run", run_context), *steps.items()]:
        (container,) = (spec := _pod(launcher, context, f"dagster-{name}"))["containers"]
        assert container["resources"] == expected[name], name
        assert {"mountPath": work, "name": "work"} in container["volumeMounts"], name
        assert [v["name"] for v in spec["volumes"]] == ["work"], name  # the instance: a ref
        sources = [s.get("secretRef", s.get("configMapRef"))["name"] for s in container["envFrom"]]
        assert sources == ["dagster-report-pipeline-user-env", "report-pipeline-aws"], name
        env = {e["name"]: e for e in container["env"]}
        assert env["DAGSTER_HOME"]["value"] == values["global"]["dagsterHome"]
        assert env["DAGSTER_PG_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == (
            "report-pipeline-postgresql"
        )


def test_a_dagster_k8s_config_tag_sizes_one_heavier_run(tmp_path: Path):
    """Per run: the `dagster-k8s/config` tag, parsed by dagster-k8s (its own schema), wins over
    the values' run resources on that run's pod."""
    resources = {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"memory": "6Gi"}}
    tag = json.dumps({"container_config": {"resources": resources}})
    run = dg.DagsterRun(job_name="extract_report_job", tags={"dagster-k8s/config": tag})
    launcher = _launcher(tmp_path)
    context = K8sContainerContext.create_for_run(run, launcher, include_run_tags=True)
    (container,) = _pod(launcher, context, "dagster-run-heavy")["containers"]
    assert container["resources"] == resources
    with pytest.raises(dg.DagsterInvalidConfigError, match="dagster-k8s/config"):
        get_user_defined_k8s_config({"dagster-k8s/config": json.dumps({"container": {}})})

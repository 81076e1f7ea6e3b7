"""What Dagster's Helm chart (dagster/dagster 1.13.x) makes of deploy/k8s/values.yaml, for the
parts that reach Dagster: the instance's dagster.yaml (the `<release>-instance` ConfigMap), the
K8sRunLauncher's config in it, and the code location's container context (the
`DAGSTER_CONTAINER_CONTEXT` the user deployment passes to its runs).

No helm binary and no chart here: this mirrors the chart's templates (templates/
configmap-instance.yaml and helpers/instance/*.tpl, the user-deployments subchart's
k8sContainerContext helper), field by field, as read in the chart's public source. It follows
what those templates do for the values this project sets and refuses values it does not mirror
(a chart-rendered run coordinator, run monitoring or run retries block), so the tests stay
honest about what they check: Dagster's and dagster-k8s's own validation of these renderings,
not helm's rendering itself (see docs/deploy.md, "Kubernetes (configured, not run here)").
`validated()` is the tests' one way to check a config against a Dagster config schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import yaml

VALUES = Path(__file__).resolve().parents[2] / "deploy" / "k8s" / "values.yaml"
RELEASE, NAMESPACE = "dagster", "report-pipeline"  # `helm install dagster ... -n report-pipeline`
FULLNAME = RELEASE  # the chart's "dagster.fullname" when the release name contains "dagster"
SERVICE_ACCOUNT = FULLNAME  # "dagster.serviceAccountName" with no override


def load_values() -> dict[str, Any]:
    return yaml.safe_load(VALUES.read_text())


def user_deployment(values: dict[str, Any]) -> dict[str, Any]:
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    return deployment


def postgres_config(values: dict[str, Any]) -> dict[str, Any]:
    """helpers/instance/_postgresql.tpl: the same block for run, event-log and schedule storage;
    the password always from DAGSTER_PG_PASSWORD (the Secret, in every pod)."""
    pg = values["postgresql"]
    db = {
        "username": pg["postgresqlUsername"],
        "password": {"env": "DAGSTER_PG_PASSWORD"},
        "hostname": pg["postgresqlHost"],
        "db_name": pg["postgresqlDatabase"],
        "port": pg["service"]["port"],
        "params": pg["postgresqlParams"],
    }
    if pg.get("postgresqlScheme"):
        db["scheme"] = pg["postgresqlScheme"]
    return {"postgres_db": db}


def launcher_config(values: dict[str, Any]) -> dict[str, Any]:
    """helpers/instance/_run-launcher.tpl, "dagsterYaml.runLauncher.k8s"."""
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    config: dict[str, Any] = {
        "load_incluster_config": launcher["loadInclusterConfig"],
        "job_namespace": launcher.get("jobNamespace") or NAMESPACE,
        "image_pull_policy": launcher["imagePullPolicy"],
        "service_account_name": SERVICE_ACCOUNT,
        "dagster_home": values["global"]["dagsterHome"],
        "instance_config_map": f"{FULLNAME}-instance",
        "postgres_password_secret": values["global"]["postgresqlSecretName"],
    }
    optional = {
        "kubeconfig_file": launcher.get("kubeconfigFile"),
        "env_config_maps": [m["name"] for m in launcher.get("envConfigMaps", [])],
        "env_secrets": [s["name"] for s in launcher.get("envSecrets", [])],
        "env_vars": launcher.get("envVars"),
        "volume_mounts": launcher.get("volumeMounts"),
        "volumes": launcher.get("volumes"),
        "labels": launcher.get("labels"),
        "resources": launcher.get("resources"),
        "fail_pod_on_run_failure": launcher.get("failPodOnRunFailure") or None,
        "scheduler_name": launcher.get("schedulerName"),
        "security_context": launcher.get("securityContext"),
    }
    config.update({key: value for key, value in optional.items() if value})
    run = launcher.get("runK8sConfig") or {}
    keys = {"containerConfig": "container_config", "podSpecConfig": "pod_spec_config",
            "podTemplateSpecMetadata": "pod_template_spec_metadata",
            "jobSpecConfig": "job_spec_config", "jobMetadata": "job_metadata"}  # fmt: skip
    if run:
        config["run_k8s_config"] = {keys[k]: v for k, v in run.items() if v}
    return config


def compute_logs(values: dict[str, Any]) -> dict[str, Any]:
    """helpers/instance/_compute-log-manager.tpl, "dagsterYaml.computeLogManager.s3"."""
    assert values["computeLogManager"]["type"] == "S3ComputeLogManager"
    s3 = values["computeLogManager"]["config"]["s3ComputeLogManager"]
    config: dict[str, Any] = {"bucket": s3["bucket"], "verify": s3.get("verify") is not False}
    names = {"localDir": "local_dir", "prefix": "prefix", "useSsl": "use_ssl",
             "verifyCertPath": "verify_cert_path", "endpointUrl": "endpoint_url",
             "skipEmptyFiles": "skip_empty_files", "uploadInterval": "upload_interval",
             "uploadExtraArgs": "upload_extra_args", "showUrlOnly": "show_url_only",
             "region": "region"}  # fmt: skip
    config.update({names[k]: v for k, v in s3.items() if k in names and v})
    return {"module": "dagster_aws.s3.compute_log_manager", "class": "S3ComputeLogManager",
            "config": config}  # fmt: skip


def concurrency(values: dict[str, Any]) -> dict[str, Any]:
    """helpers/instance/_concurrency.tpl (runs only; this project sets no pools)."""
    runs = values["concurrency"]["runs"]
    limits = [
        {"key": t["key"], **({"value": t["value"]} if t.get("value") else {}), "limit": t["limit"]}
        for t in runs.get("tagConcurrencyLimits", [])
    ]
    return {"runs": {"max_concurrent_runs": runs["maxConcurrentRuns"],
                     "tag_concurrency_limits": limits}}  # fmt: skip


def render_instance(values: dict[str, Any]) -> dict[str, Any]:
    """templates/configmap-instance.yaml: the dagster.yaml every Dagster pod mounts."""
    daemon = values["dagsterDaemon"]
    for block in ("runCoordinator", "runMonitoring", "runRetries"):
        assert not daemon[block]["enabled"], f"the chart's {block} block is not mirrored here"
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    storage = postgres_config(values)
    instance = {
        # The copy of the template read names `dagster.core.scheduler`, a module dagster 1.13 no
        # longer has; the 1.13 chart's own renderings name `dagster._core.scheduler`.
        "scheduler": {"module": "dagster._core.scheduler", "class": "DagsterDaemonScheduler"},
        "schedule_storage": {"module": "dagster_postgres.schedule_storage",
                             "class": "PostgresScheduleStorage", "config": storage},
        "run_launcher": {"module": "dagster_k8s", "class": "K8sRunLauncher",
                         "config": launcher_config(values)},
        "run_storage": {"module": "dagster_postgres.run_storage",
                        "class": "PostgresRunStorage", "config": storage},
        "event_log_storage": {"module": "dagster_postgres.event_log",
                              "class": "PostgresEventLogStorage", "config": storage},
        "compute_logs": compute_logs(values),
        "python_logs": {"python_log_level": values["pythonLogs"]["pythonLogLevel"]},
        "telemetry": {"enabled": values["telemetry"]["enabled"]},
    }  # fmt: skip
    if values["concurrency"]["enabled"]:
        instance["concurrency"] = concurrency(values)
    extra = values.get("additionalInstanceConfig") or {}
    twice = sorted(set(extra) & set(instance))
    assert not twice, f"additionalInstanceConfig repeats blocks the chart renders: {twice}"
    return {**instance, **extra}


def code_location_context(values: dict[str, Any]) -> dict[str, Any]:
    """The user-deployments subchart's "dagsterUserDeployments.k8sContainerContext": what its
    runs (and their step pods) inherit with includeConfigInLaunchedRuns."""
    deployment = user_deployment(values)
    assert deployment["includeConfigInLaunchedRuns"]["enabled"]
    k8s = {
        "image_pull_policy": deployment["image"]["pullPolicy"],
        "env_config_maps": [f"{FULLNAME}-{deployment['name']}-user-env"],
        "env_secrets": [s["name"] for s in deployment.get("envSecrets", [])],
        "volume_mounts": deployment.get("volumeMounts"),
        "volumes": deployment.get("volumes"),
        "resources": deployment.get("resources"),
        "namespace": NAMESPACE,
        "service_account_name": f"{FULLNAME}-user-deployments",
        "run_k8s_config": {"pod_spec_config": {"automount_service_account_token": True}},
    }
    return {"k8s": {key: value for key, value in k8s.items() if value}}


def validated(schema: dict, config: dict) -> dict:
    """Dagster's own config validation, through the public route: an op whose config schema
    is `schema`, checked by dg.validate_run_config (unknown keys, types, required fields)."""

    @dg.op(config_schema=schema)
    def probe():
        return None

    @dg.job
    def validation():
        probe()

    return dg.validate_run_config(validation, {"ops": {"probe": {"config": config}}})["ops"][
        "probe"
    ]["config"]

"""Resources and executor per deployment, chosen without editing files:
`REPORT_PIPELINE_DEPLOYMENT` (`local`, the default, or `production`), read once by `deployment()`
when the definitions load, and `REPORT_PIPELINE_EXECUTOR` (`in_process`, the default, or
`celery` or `k8s`, production only), read once by `executor_name()` at the same time; task
sizing follows the executor (core/model/settings.py TARGET_UNITS).

Reading it at load time is deliberate, as for `REPORT_PIPELINE_FIRST_MONTH`: resources are part
of the definitions a code location serves, fixed when it loads, and a code location serves one
deployment (its container's environment; changing it means restarting the code server).

The roots (REPORT_PIPELINE_INBOX, _STORE, _WORK) are wired here with `dg.EnvVar`, decided in
`local_resources()`, i.e. when the definitions load, never at import of this module: a variable
that is set (not empty) becomes `dg.EnvVar(name)`, whose value Dagster reads when a run, sensor
or schedule builds the resource (and shows as the variable's name, not its value, in the UI); an
unset one becomes the embedded default, var/inbox, var/store or var/work relative to the working
directory. Always wiring `dg.EnvVar` would make every run fail where nothing is set, and
defaulting at use time is what `dg.EnvVar` replaces. So setting or unsetting a root, like the
deployment itself, takes a restart of the code location; a variable set at load and gone when a
run starts fails that run (Dagster: "environment variable ... is not set"), never falls back.
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg

from report_pipeline.core.model.settings import TaskSizing
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.extractor import extractor_version
from report_pipeline.defs.deployment.io_manager import LocalIOManager
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)

DEPLOYMENT_ENV = "REPORT_PIPELINE_DEPLOYMENT"
LOCAL, PRODUCTION = "local", "production"
BUCKET_ENV = "REPORT_PIPELINE_S3_BUCKET"  # the private bucket (store, op outputs, compute logs)
IO_PREFIX = "dagster/io"  # op outputs; beside the store's staged/, work/ and archive/
# Every job's executor is set once, on the Definitions (jobs inherit it): `executor_for()`.
# The executor also sets the default task size (`settings.target_task_units`), at load.
# The default in every deployment: in-process, steps are cheap (docs/performance.md) and months
# run concurrently as separate runs through the run queue. REPORT_PIPELINE_EXECUTOR=celery sends
# each step to a Celery worker instead, and REPORT_PIPELINE_EXECUTOR=k8s runs each in its own
# Kubernetes pod (production only, both).
EXECUTOR = dg.in_process_executor
EXECUTOR_ENV = "REPORT_PIPELINE_EXECUTOR"
IN_PROCESS, CELERY, K8S = "in_process", "celery", "k8s"
ELSEWHERE = {CELERY: "on Celery workers", K8S: "in Kubernetes pods"}  # where their steps run


def deployment() -> str:
    name = os.environ.get(DEPLOYMENT_ENV) or LOCAL
    if name not in (LOCAL, PRODUCTION):
        raise ValueError(f"{DEPLOYMENT_ENV}={name!r}: expected {LOCAL!r} or {PRODUCTION!r}")
    return name


def executor_name(deployment_name: str) -> str:
    """REPORT_PIPELINE_EXECUTOR, checked against the deployment. Celery and Kubernetes are
    refused outside production: their steps run in other processes, on other hosts, and share
    only what the instance ref and the resources name. The local deployment keeps op outputs
    (Dagster's filesystem IO manager), compute logs, the store and the inbox in local folders a
    worker on another host cannot see, and its sqlite instance cannot be shared between hosts;
    a run would fail at its second step there, or worse, succeed on one host by accident."""
    name = os.environ.get(EXECUTOR_ENV) or IN_PROCESS
    if name not in (IN_PROCESS, CELERY, K8S):
        raise ValueError(f"{EXECUTOR_ENV}={name!r}: expected {IN_PROCESS!r}, {CELERY!r} or {K8S!r}")
    if name in ELSEWHERE and deployment_name != PRODUCTION:
        raise ValueError(
            f"{EXECUTOR_ENV}={name} needs {DEPLOYMENT_ENV}=production (Postgres instance, S3 "
            f"store, S3 IO manager and S3 compute logs): with {DEPLOYMENT_ENV}="
            f"{deployment_name!r}, steps {ELSEWHERE[name]} would look for op outputs and the "
            "store in folders only this host has"
        )
    return name


def executor_for(name: str) -> dg.ExecutorDefinition:
    """The executor every job runs on (`name` from `executor_name()`): EXECUTOR (in-process),
    dagster-celery's executor configured from the environment
    (defs/deployment/celery_executor.py), or
    dagster-k8s's k8s_job_executor (defs/deployment/k8s_executor.py)."""
    if name == CELERY:
        from report_pipeline.defs.deployment.celery_executor import celery_executor

        return celery_executor()
    if name == K8S:
        from report_pipeline.defs.deployment.k8s_executor import k8s_executor

        return k8s_executor()
    return EXECUTOR


def decoders_for(executor: str) -> int:
    """`settings.decoders` per executor: 0 (one decoder per core) except in a Kubernetes pod,
    where os.cpu_count() is the node's cores, not the pod's: there, the pod's CPUs."""
    if executor == K8S:
        from report_pipeline.defs.deployment.k8s_executor import (
            STEP_CPUS,  # no dagster_k8s import
        )

        return STEP_CPUS
    return 0


# Where things live: set by the deployment, never per run (see defs/deployment/resources.py).
INBOX_ENV, STORE_ENV, WORK_ENV = (
    "REPORT_PIPELINE_INBOX",
    "REPORT_PIPELINE_STORE",
    "REPORT_PIPELINE_WORK",
)
DEFAULT_ROOTS = {INBOX_ENV: "var/inbox", STORE_ENV: "var/store", WORK_ENV: "var/work"}


def root(variable: str) -> str:
    """`dg.EnvVar(variable)` when the variable is set (not empty) now, else its default root."""
    return dg.EnvVar(variable) if os.environ.get(variable) else DEFAULT_ROOTS[variable]


def local_resources(executor: str = IN_PROCESS) -> dict[str, Any]:
    """The embedded default: local inbox, store and scratch under their roots (see above);
    Dagster's filesystem IO manager. Tasks and decoders sized for the executor."""
    sizing = TaskSizing.for_executor(executor)
    settings = PipelineSettingsResource(
        work_root=root(WORK_ENV),
        extractor_version=extractor_version(),
        target_task_units=sizing.target_units,
        decoders=decoders_for(executor),
    )
    return {
        "inbox": InboxResource(root=root(INBOX_ENV)),
        "store": StoreResource(root=root(STORE_ENV)),
        "settings": settings,
        "clock": ClockResource(),
        "checks": CheckSettingsResource(),
        "io_manager": LocalIOManager(),  # Dagster's layout; paths shown relative to it
    }


def production_resources(executor: str = IN_PROCESS) -> dict[str, Any]:
    """Production (with the Postgres instance, deploy/production/dagster.yaml): the store on S3,
    the primary report source on S3 when REPORT_PIPELINE_INBOX_BUCKET is set (else the local
    inbox), and op outputs through the S3 IO manager, all in the environment
    (defs/deployment/s3_resources.py lists the variables). The worker settings, clock and check
    settings are the local ones."""
    from report_pipeline.defs.deployment import s3_resources

    local = local_resources(executor)
    return {
        **local,
        "inbox": s3_resources.production_inbox_resource(local["inbox"]),
        "store": s3_resources.production_store_resource(),
        **s3_io_manager(),
    }


def s3_io_manager() -> dict[str, Any]:
    """Op outputs through dagster_aws's S3PickleIOManager (one that loads what its own process
    wrote from memory: s3_io_manager.py), so a step on one machine can read what a step on
    another wrote: REPORT_PIPELINE_S3_BUCKET under `dagster/io/`, at run time; the
    endpoint as for the store (REPORT_PIPELINE_S3_ENDPOINT, else boto3's AWS_ENDPOINT_URL), region
    and credentials from the environment. Its uploads ask for no encryption: the bucket's default
    encryption (SSE-S3) covers them."""
    # ~0.4 s of imports (dagster_aws.s3): only when deployed on S3
    from report_pipeline.defs.deployment.s3_io_manager import RunLocalS3PickleIOManager
    from report_pipeline.defs.deployment.s3_resources import s3_resource_from_env

    s3 = s3_resource_from_env(retries=5)  # botocore retries throttling and 5xx itself: 6 attempts
    bucket = dg.EnvVar(BUCKET_ENV)
    manager = RunLocalS3PickleIOManager(s3_resource=s3, s3_bucket=bucket, s3_prefix=IO_PREFIX)
    return {"io_manager": manager}


def resources_for(name: str, executor: str = IN_PROCESS) -> dict[str, Any]:
    return production_resources(executor) if name == PRODUCTION else local_resources(executor)

"""Steps in Kubernetes pods (`REPORT_PIPELINE_EXECUTOR=k8s`, production deployment only):
dagster-k8s's `k8s_job_executor`, one Kubernetes Job per step, with the pod resources each kind
of step needs. Configured here, **not run here** (no cluster on the development machine):
report_pipeline_tests/production/test_k8s_config.py and test_k8s_pods.py check it against
dagster-k8s's schemas and the kubernetes client's models; docs/deploy.md, "Kubernetes
(configured, not run here)".

Imported only when the executor is chosen: dagster_k8s and the kubernetes client cost imports
the other deployments should not pay (the constants below are read without them).

Everything else a step pod needs comes from the deployment, not from here: image, namespace,
service account, environment (the code server's, through the chart's
`includeConfigInLaunchedRuns`), the instance ConfigMap and the Postgres password Secret (the
K8sRunLauncher's), and the work-root volume (`runLauncher.config.k8sRunLauncher.volumes` in
deploy/k8s/values.yaml). The run pod itself (which only orchestrates here) is sized by the
values file (`runK8sConfig`).
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from report_pipeline.core.model.settings import DecodeSettings

# CPUs of a decoding step's pod, and so its decoder processes (`settings.decoders`, set from this
# when the definitions load with this executor): in a pod os.cpu_count() is the node's count, not
# the pod's share, so "one decoder per core" would fork one per node core inside a 2-CPU pod.
STEP_CPUS = 2
# Memory: each decoder may grow past its size at the fork by `settings.decoder_memory_mib`
# (RLIMIT_AS; pages it shares with the step process count once in the pod's cgroup), and the
# step process holds the PDF and Dagster. The pod's limit leaves STEP_OVERHEAD_MIB above the
# decoders' ceilings, so a decoder that grows too far hits its own RLIMIT_AS first (quarantined
# `memory_limit`, as on any host) and the cgroup's OOM killer, which would end the decoder as
# `decoder_crashed` or the whole step, is the backstop.
STEP_OVERHEAD_MIB = 2048
DECODING_LIMIT_MIB = STEP_CPUS * DecodeSettings().memory_bytes // 2**20 + STEP_OVERHEAD_MIB
DECODING = {
    "requests": {"cpu": str(STEP_CPUS), "memory": "3Gi"},
    "limits": {"memory": f"{DECODING_LIMIT_MIB}Mi"},
}
# Every other step: read a PDF's page tree, write records, publish a manifest.
LIGHT = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
# Ops that decode images: extract_pages, and publish_manifest, which first extracts any planned
# page group that has no result (core: a re-execution from failure leaves some out).
DECODING_OPS = ("extract_pages", "publish_manifest")
# No CPU limit anywhere: CFS throttling would stretch decodes past their wall-clock timeout
# (`settings.decode_image_seconds`); the CPU budget per report is enforced by RLIMIT_CPU.
# Pods at once per run (each a page group or a smaller step); the cluster's capacity and the
# instance's run queue (2 report runs at once) bound the rest.
MAX_CONCURRENT = 8


def _container(resources: dict[str, Any]) -> dict[str, Any]:
    return {"container_config": {"resources": resources}}


def executor_config() -> dict[str, Any]:
    """The executor's config (`execution: {config: ...}` in run-config terms). Keys of
    `per_step_k8s_config` are op names (the same op in every page group)."""
    return {
        "max_concurrent": MAX_CONCURRENT,
        "step_k8s_config": _container(LIGHT),
        "per_step_k8s_config": {op: _container(DECODING) for op in DECODING_OPS},
    }


def k8s_executor() -> dg.ExecutorDefinition:
    from dagster_k8s import k8s_job_executor  # the kubernetes client: only when chosen

    return k8s_job_executor.configured(executor_config(), name="k8s")

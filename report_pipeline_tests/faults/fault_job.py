"""`extract_report_job` as a deployment loads it, rebuilt wherever a run or its re-execution from
failure needs it: the project's definitions for the deployment (the embedded default or
production), with the storage fault layer (devstack/faults.py) in front of the store when a fault
spec is given. The roots, buckets and endpoint are the environment's, read when the run starts
(`dg.EnvVar`).

What the job is built from is passed as its reconstructable arguments, never read from the
environment where it loads: Dagster keeps the job it built last for a reconstructable target, so
a test's run would otherwise get the job (and the faults) an earlier test built."""

from __future__ import annotations

import os

import dagster as dg

from devstack.fault_runs import QUIET
from devstack.faults import FAULTS_ENV, with_store_faults
from report_pipeline.defs.reports.ops import stage_report_run_config


def job(deployment: str, faults: str) -> dg.JobDefinition:
    from report_pipeline.definitions import build_defs

    defs = with_store_faults(build_defs(deployment), faults)
    return defs.resolve_job_def("extract_report_job")


def reconstructable(faults: str = "") -> dg.ReconstructableJob:
    """The job of the deployment in the environment (REPORT_PIPELINE_DEPLOYMENT), behind
    `faults` (none: "")."""
    from report_pipeline.defs.deployment.deployment import deployment

    return dg.build_reconstructable_job(
        __name__, "job", reconstructable_kwargs={"deployment": deployment(), "faults": faults}
    )


def run(instance: dg.DagsterInstance, month: str, pages_per_task: int) -> dg.ExecuteJobResult:
    """One run of the month, as a UI launch makes it (the month's report, `pages_per_task`
    pages a step), executed here on `instance`, behind the faults REPORT_PIPELINE_STORAGE_FAULTS
    names; the caller closes the result."""
    config = {**QUIET, **stage_report_run_config({"pages_per_task": pages_per_task})}
    return dg.execute_job(
        reconstructable(os.environ.get(FAULTS_ENV, "")), instance, run_config=config,
        tags={"dagster/partition": month}, raise_on_error=False,
    )  # fmt: skip


def reexecute_from_failure(instance: dg.DagsterInstance, run_id: str) -> dg.ExecuteJobResult:
    """ "Re-execute from failure" of `run_id`, as the UI does it (the parent's tags and config)."""
    parent = instance.get_run_by_id(run_id)
    options = dg.ReexecutionOptions.from_failure(run_id, instance)
    tags = {k: v for k, v in parent.tags.items()
            if not k.startswith("dagster/") or k == "dagster/partition"}  # fmt: skip
    return dg.execute_job(
        reconstructable(), instance, reexecution_options=options,
        run_config=parent.run_config, raise_on_error=False, tags=tags,
    )  # fmt: skip


def step_failures(instance: dg.DagsterInstance, run_id: str) -> list[dg.DagsterEvent]:
    kind = dg.DagsterEventType.STEP_FAILURE
    return [e.dagster_event for e in instance.all_logs(run_id, of_type=kind)]


def first_event_time(instance: dg.DagsterInstance, run_id: str, kinds: set) -> float | None:
    """When (wall clock) the run's first event of `kinds` was logged."""
    times = [e.timestamp for e in instance.all_logs(run_id, of_type=kinds)]
    return min(times) if times else None

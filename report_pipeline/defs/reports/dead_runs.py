"""`dead_run_sensor`: report runs whose worker is gone without Dagster noticing are failed.

A run launched by the daemon runs under the code server, which marks it failed within a second
when its worker dies; run monitoring stops any run past its max runtime (dagster.yaml). A run
started elsewhere, by `dagster asset materialize` for one, is its own process: killed, it stays
STARTED for ever and holds a `max_concurrent_runs` slot and its month's slot.

The design is the simplest check that cannot be wrong on a live run: the run's RUN_START event
records the pid of the process that orchestrates the run (with the in-process executor, the one
that runs every step). If no such process exists, or the pid now belongs to a process that
started after the run did, the worker is gone: the run is reported failed through the instance
(`report_run_failed`), so the queue moves on and, for a launched run, run retries re-execute it
from failure. A run started outside the daemon has no code location to be retried from, so this
sensor requests one fresh run of the month in its place (the pipeline is idempotent: the new run
archives what is missing and reuses what is there), at most MAX_REPLACEMENTS times in a row.

Leases are not used: a lease says how long a worker may keep its workdir (60 min), not whether
it is alive. The pid check assumes the worker ran on this host, true of the embedded default
(runs, daemon and sqlite under one DAGSTER_HOME); a run on a lost host is ended by run
monitoring's max runtime.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from report_pipeline.core.model.wording import plural
from report_pipeline.core.sandbox.child import proc_stat
from report_pipeline.defs.reports.jobs import extract_report_job

PARTITION_TAG = "dagster/partition"
REPLACES_TAG = "report_pipeline/replaces_run"
REPLACEMENT_TAG = "report_pipeline/replacement_number"
MAX_REPLACEMENTS = 2


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise OSError("no btime in /proc/stat")


def process_alive_since(pid: int, since: float) -> bool:
    """Whether process `pid` exists and started no later than `since` (a Unix time): a pid
    reused by a newer process is not the run's worker."""
    try:
        fields = proc_stat(pid)
        started = _boot_time() + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return False
    state = fields[0]
    return state not in ("Z", "X") and started <= since + 1.0


def worker_pid(instance: dg.DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """(pid, time) of the run's RUN_START event: its orchestrating process."""
    found = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.RUN_START, limit=1
    ).records
    if not found or found[0].event_log_entry.dagster_event is None:
        return None
    entry = found[0].event_log_entry
    return entry.dagster_event.pid, entry.timestamp


def dead_report_runs(instance: dg.DagsterInstance) -> list[tuple[dg.DagsterRun, int]]:
    """STARTED report runs (tagged with a partition) whose worker process is gone."""
    dead = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
        run = record.dagster_run
        worker = worker_pid(instance, run.run_id) if PARTITION_TAG in run.tags else None
        if worker and worker[0] and not process_alive_since(*worker):
            dead.append((run, worker[0]))
    return dead


def replacement(run: dg.DagsterRun) -> dg.RunRequest | None:
    """A fresh run of the month for a dead run nothing else will retry, within the limit."""
    number = int(run.tags.get(REPLACEMENT_TAG, "0")) + 1
    if run.remote_job_origin is not None or number > MAX_REPLACEMENTS:
        return None  # run retries re-execute launched runs; past the limit, a person decides
    tags = {k: v for k, v in run.tags.items() if not k.startswith("dagster/")}
    return dg.RunRequest(
        run_key=f"replaces-{run.run_id}",
        partition_key=run.tags[PARTITION_TAG],
        run_config=run.run_config,
        tags={**tags, REPLACES_TAG: run.run_id, REPLACEMENT_TAG: str(number)},
    )


@dg.sensor(
    job=extract_report_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Fail report runs whose worker died unnoticed; run retries (or a fresh run of "
    "the month) take over.",
)
def dead_run_sensor(context: dg.SensorEvaluationContext):
    requests, failed = [], []
    for run, pid in dead_report_runs(context.instance):
        current = context.instance.get_run_by_id(run.run_id)
        if current is None or current.status != dg.DagsterRunStatus.STARTED:
            continue  # it finished between the two reads
        context.instance.report_run_failed(
            current, f"Run worker (pid {pid}) is gone; marked failed by dead_run_sensor."
        )
        failed.append(run.run_id)
        if (request := replacement(current)) is not None:
            requests.append(request)
    if failed:
        context.log.warning(f"marked {plural(len(failed), 'run')} failed: {', '.join(failed)}")
    return requests or dg.SkipReason(f"{plural(len(failed), 'dead run')} failed; nothing to launch")

"""Where a backfill's wall time went, from the instance's own records: the daemon's wait before
the runs exist, each run's queue, launch, worker start and body, how many report slots were
busy, and the wait between the last run's end and the backfill being marked completed."""

from __future__ import annotations

from statistics import median
from typing import Any

import dagster as dg

from bench.common import BenchError

MARKS = {
    "PIPELINE_ENQUEUED": "enqueued",
    "PIPELINE_STARTING": "starting",
    "PIPELINE_START": "started",
    "PIPELINE_SUCCESS": "ended",
    "PIPELINE_FAILURE": "ended",
    "PIPELINE_CANCELED": "ended",
}


def _marks(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """The first timestamp of each run-lifecycle event."""
    found: dict[str, float] = {}
    for record in instance.get_records_for_run(run_id).records:
        entry = record.event_log_entry
        name = MARKS.get(entry.dagster_event.event_type_value) if entry.dagster_event else None
        if name and name not in found:
            found[name] = entry.timestamp
    return found


def _busy(intervals: list[tuple[float, float]]) -> float:
    """Mean number of intervals open over their span (first start to last end)."""
    if not intervals:
        return 0.0
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    return sum(e - s for s, e in intervals) / span if span > 0 else 0.0


def timeline(instance: dg.DagsterInstance, backfill_id: str, launched: float, done: float) -> dict:
    """`launched`/`done`: the backfill's own timestamps (created, marked completed)."""
    records = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
    runs: list[dict[str, Any]] = []
    for record in records:
        marks = _marks(instance, record.dagster_run.run_id)
        marks["created"] = record.create_timestamp.timestamp()
        runs.append({"run_id": record.dagster_run.run_id, "status": record.dagster_run.status.value,
                     "partition": record.dagster_run.tags.get("dagster/partition"),
                     **{k: v - launched for k, v in marks.items()}})  # fmt: skip
    complete = [r for r in runs if {"enqueued", "starting", "started", "ended"} <= r.keys()]
    if not complete or len(complete) != len(runs):
        raise BenchError(f"{len(runs) - len(complete)} of {len(runs)} runs did not run through")

    def med(a: str, b: str) -> float | None:
        return median(r[b] - r[a] for r in complete) if complete else None

    others = [r.dagster_run for r in instance.get_run_records()
              if "dagster/backfill" not in r.dagster_run.tags
              and launched <= r.create_timestamp.timestamp() <= done]  # fmt: skip
    last_end = max(r["ended"] for r in complete)
    first = min(r["created"] for r in runs)
    return {
        "runs": sorted(runs, key=lambda r: r["created"]),
        "first_run_created_s": first,
        "last_run_ended_s": last_end,
        "runs_span_s": last_end - first,
        "marked_completed_s": done - launched,
        "completion_lag_s": done - launched - last_end,
        # enqueued → starting: the queue's wait for a slot and its next dequeue, and the launch
        "median_queue_wait_s": med("enqueued", "starting"),
        "median_worker_start_s": med("starting", "started"),
        "median_run_body_s": med("started", "ended"),
        "slots_busy_mean": _busy([(r["starting"], r["ended"]) for r in complete]),
        "bodies_busy_mean": _busy([(r["started"], r["ended"]) for r in complete]),
        "other_runs": [f"{r.job_name} {r.status.value}" for r in others],
        "other_report_runs": [r.run_id for r in others if "dagster/partition" in r.tags],
    }


def describe(t: dict) -> list[str]:
    """The timeline as the lines the benchmark prints."""

    def s(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} s"

    lines = [
        f"  runs created {s(t['first_run_created_s'])} after launch (the backfill daemon's tick)",
        f"  last run ended at {s(t['last_run_ended_s'])}; backfill marked completed at "
        f"{s(t['marked_completed_s'])} (lag {s(t['completion_lag_s'])})",
        f"  per run (median): queued → launched {s(t['median_queue_wait_s'])}, worker start "
        f"{s(t['median_worker_start_s'])}, body "
        f"{s(t['median_run_body_s'])}",
        f"  report slots busy {t['slots_busy_mean']:.2f} on average (of the run span); run "
        f"bodies {t['bodies_busy_mean']:.2f}",
    ]
    if t["other_runs"]:
        lines.append(f"  other runs during the backfill: {', '.join(t['other_runs'])}")
    return lines

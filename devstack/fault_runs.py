"""Months run one after another as separate runs of `extract_report_job` on a real instance,
and what the store, the instance and the fault layer's journal say about a month's runs
afterwards (however they ran: here, or a daemon's backfill): the attempts each step took (from
the run's events), whether every image was archived exactly once, the manifest's attempts agree
with those steps, nothing was left behind, and which faults struck an extraction after it had
created images. Shared by `bench.faults` and the fault-injection tests; reads the store through
a store without faults."""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from report_pipeline.core.archive.months import revisions
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.messages import RevisionRef
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.plan.record import Plan, read_plan
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.reports.guard import MAX_TRIES
from report_pipeline.defs.reports.ops import stage_report_run_config

QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
TASK_STEP = re.compile(r"\.((?:extract|archive)_pages\[\w+\])$")  # -> extract_pages[task]


@dataclass
class MonthRun:
    month: str
    run_id: str
    success: bool
    wall_s: float
    attempts: dict[str, int] = field(default_factory=dict)  # step key -> attempts it took

    @property
    def retries(self) -> int:
        return sum(self.attempts.values()) - len(self.attempts)

    def row(self) -> dict:
        attempts = self.attempts.values()
        return {"month": self.month, "success": self.success, "wall_s": round(self.wall_s, 2),
                "steps": len(attempts), "attempts": sum(attempts), "retries": self.retries,
                "max_step_attempts": max(attempts, default=0)}  # fmt: skip


def months_from(first: str, count: int) -> list[str]:
    year, month = map(int, first.split("-"))
    out = []
    for i in range(count):
        y, m = divmod(month - 1 + i, 12)
        out.append(f"{year + y:04d}-{m + 1:02d}")
    return out


def step_attempts(instance: dg.DagsterInstance, run_id: str) -> dict[str, int]:
    """Attempts per step that started: its STEP_START and STEP_RESTARTED events (a retry)."""
    kinds = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_RESTARTED}
    attempts: dict[str, int] = {}
    for event in instance.all_logs(run_id, of_type=kinds):
        step = event.dagster_event.step_key
        attempts[step] = attempts.get(step, 0) + 1
    return attempts


def run_months(
    job: dg.JobDefinition, instance: dg.DagsterInstance, months: list[str], pages_per_task: int,
) -> list[MonthRun]:  # fmt: skip
    """One run per month, in order (a backfill's runs, without the daemon's waits)."""
    config = {**QUIET, **stage_report_run_config({"pages_per_task": pages_per_task})}
    runs = []
    for month in months:
        start = time.perf_counter()
        result = job.execute_in_process(
            partition_key=month, instance=instance, run_config=config, raise_on_error=False
        )
        wall = time.perf_counter() - start
        runs.append(MonthRun(month, result.run_id, result.success, wall,
                             step_attempts(instance, result.run_id)))  # fmt: skip
    return runs


def month_manifest(store: Store, month: str) -> tuple[Manifest, Plan]:
    """The month's one revision: its manifest and plan."""
    found = revisions(store, month)
    assert len(found) == 1, f"{month}: {len(found)} revisions"
    report_id, revision = found[0]
    manifest = store_json.read_manifest(store, keys.manifest_key(report_id, revision))
    assert manifest is not None, f"{month}: no manifest"
    ref = RevisionRef(report_id, month, manifest.source_hash, manifest.extractor_version, revision)
    return manifest, read_plan(store, ref)


def task_of(plan: Plan, page: int) -> str:
    (task,) = [t.task_key for t in plan.tasks if t.first_page <= page <= t.last_page]
    return task


def verify_month(store: Store, run: MonthRun) -> Manifest:
    """Every image archived exactly once, and the manifest's attempts are the steps'."""
    assert run.success, f"{run.month}: run {run.run_id} failed"
    assert max(run.attempts.values()) <= MAX_TRIES, run.attempts
    manifest, plan = month_manifest(store, run.month)
    assert manifest.state == "complete", run.month
    prefix = keys.archive_prefix(manifest.report_id, manifest.parent_revision)
    listed = [o.key for o in store.list(f"{prefix}/{keys.IMAGES}/")]
    hashes = {c.content_hash for c in manifest.children if c.state == "archived"}
    assert sorted(listed) == sorted(
        keys.image_key(manifest.report_id, manifest.parent_revision, h) for h in hashes
    ), f"{run.month}: images listed differ from the manifest's"
    assert len(listed) == manifest.counts.distinct_images
    for key in listed:  # content-addressed: the bytes are what the key says, stored once
        digest = hashlib.sha256(store.get_bytes(key, 1 << 26)).hexdigest()
        assert key.endswith(f"/{digest}.png"), key
    steps = {m[1]: n for s, n in run.attempts.items() if (m := TASK_STEP.search(s))}
    for child in manifest.children:
        task = task_of(plan, child.page)
        want = steps[f"extract_pages[{task}]"] + steps[f"archive_pages[{task}]"] - 1
        assert child.attempts == want, (run.month, child.page, child.attempts, want)
        assert child.validated_first_attempt == (child.state == "archived" and want == 1)
    first = sum(c.validated_first_attempt for c in manifest.children)
    pct = round(100 * first / len(manifest.children), 2) if manifest.children else 100.0
    assert manifest.metrics.validated_first_attempt_pct == pct
    return manifest


def leftovers(store: Store) -> list[str]:
    """Working material still in the store (staged sources, outcomes): none once every month
    published its manifest."""
    return [o.key for prefix in (keys.STAGED, keys.WORK) for o in store.list(f"{prefix}/")]


def check_results(instance: dg.DagsterInstance, run_id: str) -> dict[str, tuple[bool, str]]:
    """The run's asset check evaluations: check name -> (passed, severity)."""
    kind = dg.DagsterEventType.ASSET_CHECK_EVALUATION
    found = {}
    for event in instance.all_logs(run_id, of_type=kind):
        evaluation = event.dagster_event.event_specific_data
        found[evaluation.check_name] = (evaluation.passed, evaluation.severity.value)
    return found


def read_journal(path: Path, run_ids: set[str]) -> list[dict]:
    """The fault layer's journal lines from these runs (not a sensor's or another run's)."""
    lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [line for line in lines if line["scope"] in run_ids]


def struck_after_writes(journal: list[dict]) -> list[dict]:
    """Faults that struck an extract_pages attempt which had created images: before the fault,
    or in uploads already under way (S3's run in the background), each fault with `wrote`."""
    struck = []
    for fault in (line for line in journal if line["event"] == "fault"):
        if ".extract_pages[" in fault["session"] and (wrote := written(journal, fault)):
            struck.append({**fault, "wrote": wrote})
    return struck


def written(journal: list[dict], fault: dict) -> list[str]:
    """The objects `fault`'s step attempt created (put_if_absent True), before or after it."""
    wrote = [
        line["key"] for line in journal
        if line["event"] == "put_if_absent" and line["created"]
        and (line["session"], line["scope"]) == (fault["session"], fault["scope"])
    ]  # fmt: skip
    return list(dict.fromkeys([*fault["created"], *wrote]))


def not_refound(journal: list[dict], fault: dict) -> list[str]:
    """The objects `fault`'s attempt created that no later attempt of the step found again
    (put_if_absent False), or that one created again: [] when the retries re-found them all."""
    step, retry = fault["session"].rsplit("/", 1)
    later: dict[str, list[bool]] = {}
    for line in journal:
        if line["event"] != "put_if_absent" or line["scope"] != fault["scope"]:
            continue
        other, number = line["session"].rsplit("/", 1)
        if other == step and int(number) > int(retry):
            later.setdefault(line["key"], []).append(line["created"])
    return [key for key in written(journal, fault) if not later.get(key) or any(later[key])]

"""The runs `bench.celery` measures: one `dagster asset materialize` per month on the production
configuration (`Bench.run`), its per-step split from the event log, and the least-squares fit
through (steps, run seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from statistics import median

import dagster as dg

from bench.common import ROOT, BenchError
from devstack import local_celery
from report_pipeline.core.model.store_json import read_manifest
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.defs.reports.ops import stage_report_run_config

FIXTURE = ROOT / "fixtures" / "pdfs" / "monthly_report.pdf"


def months() -> Iterator[str]:
    year, month = 2000, 1
    while True:
        yield f"{year:04d}-{month:02d}"
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)


def scaled_report(scale: int, folder: Path) -> Path:
    """The fixture's pages `scale` times over, in one PDF (images repeat: the archive stores
    each once, every occurrence is still extracted, validated and recorded)."""
    import pymupdf

    path = folder / f"monthly_report_x{scale}.pdf"
    with pymupdf.open(FIXTURE) as source, pymupdf.open() as report:
        for _ in range(scale):
            report.insert_pdf(source)
        report.save(path)
    return path


class Bench:
    def __init__(self, scratch: Path, env: dict[str, str], s3, bucket: str, inbox: str):
        self.scratch, self.env, self.s3 = scratch, env, s3
        self.bucket, self.inbox = bucket, inbox
        self.months = months()
        self.reader = scratch / "reader"
        self.reader.mkdir()
        (self.reader / "dagster.yaml").write_bytes(local_celery.PRODUCTION_YAML.read_bytes())

    def run(self, pdf: Path, executor: str, pages_per_task: int = 0) -> dict:
        """One `dagster asset materialize`; its run's duration and per-step figures."""
        month = next(self.months)
        self.s3.put_object(Bucket=self.inbox, Key=f"incoming/{month}/{pdf.name}",
                           Body=pdf.read_bytes())  # fmt: skip
        folder = Path(tempfile.mkdtemp(prefix=f"{executor}-", dir=self.scratch))
        (folder / "home").mkdir()
        (folder / "home" / "dagster.yaml").write_bytes(local_celery.PRODUCTION_YAML.read_bytes())
        env = {**self.env, "DAGSTER_HOME": str(folder / "home"),
               "REPORT_PIPELINE_WORK": str(folder / "work"), "TMPDIR": str(folder)}  # fmt: skip
        if executor == "celery":
            env["REPORT_PIPELINE_EXECUTOR"] = "celery"
        config = stage_report_run_config({"pages_per_task": pages_per_task})
        command = [sys.executable, "-m", "dagster", "asset", "materialize", "-m",
                   "report_pipeline.definitions", "--select", "report_manifest",
                   "--partition", month, "--config-json", json.dumps(config)]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode:
            raise BenchError(f"{executor} run of {month} failed:\n{done.stderr[-3000:]}")
        return {"executor": executor, "month": month, "wall_s": wall, **self.read(month)}

    def read(self, month: str) -> dict:
        with dg.DagsterInstance.from_config(str(self.reader)) as instance:
            (run,) = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": month}))
            stats = instance.get_run_stats(run.run_id)
            sample = {"run_id": run.run_id, "run_s": stats.end_time - stats.start_time}
            sample.update(step_split(instance, run.run_id))
        store = S3Store(self.s3, self.bucket, "pipeline")
        (key,) = [o.key for o in store.list(f"archive/inbox-{month}/")
                  if o.key.endswith("/manifest.json")]  # fmt: skip
        manifest = read_manifest(store, key)
        counts = manifest.counts
        if manifest.state != "complete" or counts.accounted != counts.expected:
            raise BenchError(f"{month}: manifest {manifest.state}, {counts}")
        sample["counts"] = {"pages": manifest.counts.pages, "expected": manifest.counts.expected,
                            "accounted": manifest.counts.accounted}  # fmt: skip
        return sample


def step_split(instance: dg.DagsterInstance, run_id: str) -> dict:
    """Steps, page groups, and per step (median seconds): queue, worker set-up, op, hand-back
    (Celery runs; in-process runs have only `op`)."""
    times: dict[str, dict[str, float]] = defaultdict(dict)
    submitted: dict[str, float] = {}
    for entry in instance.all_logs(run_id):
        event, step = entry.dagster_event, entry.step_key
        if event is None or step is None:
            continue
        kind, message = event.event_type_value, event.message or ""
        if kind == "ENGINE_EVENT" and message.startswith("Submitting celery task"):
            submitted[step] = entry.timestamp
            times[step]["submitted"] = entry.timestamp
        elif kind == "ENGINE_EVENT" and "in celery worker" in message:
            times[step]["taken"] = entry.timestamp
        elif kind in ("STEP_START", "STEP_SUCCESS"):
            times[step][kind] = entry.timestamp
    # the hand-back: a step's success until the orchestrator submits what waited for it
    ends = [t["STEP_SUCCESS"] for t in times.values() if "STEP_SUCCESS" in t]
    parts: dict[str, list[float]] = defaultdict(list)
    for t in times.values():
        if "STEP_SUCCESS" not in t:
            continue
        parts["op"].append(t["STEP_SUCCESS"] - t["STEP_START"])
        if "taken" in t:
            parts["queue"].append(t["taken"] - t["submitted"])
            parts["setup"].append(t["STEP_START"] - t["taken"])
            later = [s for s in submitted.values() if s >= t["STEP_SUCCESS"]]
            if later:
                parts["handback"].append(min(later) - t["STEP_SUCCESS"])
    groups = sum(1 for s in times if ".extract_pages[" in s)
    op_s: dict[str, float] = defaultdict(float)  # seconds inside each op, over its steps
    for step, t in times.items():
        if "STEP_SUCCESS" in t:
            op_s[step.split("[")[0].rsplit(".", 1)[-1]] += t["STEP_SUCCESS"] - t["STEP_START"]
    return {"steps": len(ends), "groups": groups, "op_s": dict(op_s),
            "split": {name: median(values) for name, values in parts.items()}}  # fmt: skip


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares: seconds = fixed + per_step * steps."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope

"""One timed run of each variant: the plain loop, a Dagster run, and `pdfimages -all`.

Every run gets fresh directories under the caller's scratch directory, removed afterwards, so
nothing is reused between runs (no store hits, no warm instance).
"""

from __future__ import annotations

import gc
import re
import resource
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import dagster as dg

from bench.common import ROOT, BenchError
from report_pipeline.core.archive.table import write_table
from report_pipeline.core.decode.child import decode_in_process
from report_pipeline.core.decode.pool import decode_pages
from report_pipeline.core.model.settings import DecodeSettings, PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.deployment import EXECUTOR
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import manifest_table
from report_pipeline.defs.reports.ops import stage_report_run_config

INSTANCE_YAML = ROOT / "dagster_home" / "dagster.yaml"
MONTH = "2026-10"
SOURCE_NAME = "inbox"  # InboxResource's default name, so both paths build the same report id
# Only warnings and errors from the run's console logger (the default prints every event).
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
MAPPING_KEY = re.compile(r"\[(.+)\]$")

Sample = dict[str, Any]


@contextmanager
def fresh_dir(scratch: Path, prefix: str) -> Iterator[Path]:
    """A new empty directory under `scratch`, removed when the block ends."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=scratch))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


SETTLE = True  # settled_heap() settles the heap before each timed run
TIMING = False  # True while a timed run runs (inside settled_heap): bench.cold times collections


@contextmanager
def settled_heap() -> Iterator[None]:
    """Each timed run starts on a settled heap: no garbage of earlier runs, and all that is
    already loaded frozen, as report_pipeline/definitions.py freezes the code location it loads.
    Without it, a run in this long-lived process paid full collections over earlier runs'
    leftovers (0.3-0.45 s, landing on whichever variant was running), which a run worker, a fresh
    process per run, never has. It is kinder than a fresh process, though: after the collect the
    run's own full passes mostly do not come (0.02-0.03 s of collecting per production run here,
    ~0.2 s in a fresh one). `python -m bench.cold` measures fresh processes, each with the heap
    it has (SETTLE False)."""
    global TIMING
    if SETTLE:
        gc.collect()
        gc.freeze()
    TIMING = True
    try:
        yield
    finally:
        TIMING = False
        if SETTLE:
            gc.unfreeze()


def cpu_seconds() -> float:
    """CPU used so far by this process and the children it reaped (decoders, the walk)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))  # fmt: skip
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def plain(
    pdf: Path, scratch: Path, decode: DecodeSettings | None = None, table: bool = True
) -> Sample:
    """`run_report` into a fresh LocalStore and work root, then the manifest table beside the
    manifest: the same artifacts the job's two assets (report_manifest, manifest_table) leave in
    the store (`table=False`: the manifest only, the baseline before 2026-11-30). By default
    decoding in this process (the baseline), else with the given isolated decoder pool."""
    with fresh_dir(scratch, "plain-") as tmp:
        store = LocalStore(tmp / "store")
        settings = PipelineSettings(tmp / "work", decode=decode or DecodeSettings())
        # no decode settings: the plain loop, decoding in this process (no decoder children)
        decoders = decode_pages if decode else decode_in_process
        with settled_heap():
            start, cpu = time.perf_counter(), cpu_seconds()
            manifest = run_report(store, pdf, settings, SOURCE_NAME, MONTH, 0, decoders)
            if table:
                write_table(store, manifest)
            wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {"wall_s": wall, "cpu_s": cpu, "counts": asdict(manifest.counts)}


def _definitions(tmp: Path, pdf: Path) -> dg.Definitions:
    inbox = tmp / "inbox" / MONTH
    inbox.mkdir(parents=True)
    shutil.copyfile(pdf, inbox / pdf.name)
    resources = {
        "inbox": InboxResource(root=str(tmp / "inbox")),
        "store": StoreResource(root=str(tmp / "store")),
        "settings": PipelineSettingsResource(work_root=str(tmp / "work")),
        "checks": CheckSettingsResource(),
    }
    return dg.Definitions(
        assets=[report_manifest, manifest_table], jobs=[extract_report_job],
        resources=resources,
        executor=EXECUTOR,
    )  # fmt: skip


def _op_seconds(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """Seconds spent inside each op (summed over its mapped steps), from the run's step stats."""
    totals: dict[str, float] = defaultdict(float)
    for stat in instance.get_run_step_stats(run_id):
        if stat.start_time is not None and stat.end_time is not None:
            op = MAPPING_KEY.sub("", stat.step_key).rsplit(".", 1)[-1]
            totals[op] += stat.end_time - stat.start_time
    return dict(totals)


def _summarise(result: Any, instance: dg.DagsterInstance, wall: float) -> Sample:
    if not result.success:
        raise BenchError(f"Dagster run {result.run_id} failed")
    stats = instance.get_run_stats(result.run_id)
    done = [e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"]
    tasks = {m.group(1) for key in done if (m := MAPPING_KEY.search(key or ""))}
    return {
        "wall_s": wall,
        "run_s": stats.end_time - stats.start_time,
        "steps": len(done),
        "tasks": len(tasks),
        "op_s": _op_seconds(instance, result.run_id),
        "counts": asdict(result.output_for_node("report_manifest").counts),
    }


def dagster(pdf: Path, scratch: Path, pages_per_task: int = 0) -> Sample:
    """`extract_report_job` for one partition on a fresh embedded default instance;
    `pages_per_task` > 0 is passed as a Launchpad user would, in stage_report's run config."""
    with fresh_dir(scratch, "dagster-") as tmp:
        home = tmp / "dagster_home"
        home.mkdir()
        shutil.copyfile(INSTANCE_YAML, home / "dagster.yaml")
        job = _definitions(tmp, pdf).resolve_job_def("extract_report_job")
        config = {**QUIET, **stage_report_run_config({"pages_per_task": pages_per_task})}
        with dg.DagsterInstance.from_config(str(home)) as instance:
            with settled_heap():
                start, cpu = time.perf_counter(), cpu_seconds()
                result = job.execute_in_process(
                    partition_key=MONTH, instance=instance, run_config=config, raise_on_error=False
                )
                wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
            return {**_summarise(result, instance, wall), "cpu_s": cpu}


def pdfimages(pdf: Path, scratch: Path, exe: str) -> Sample:
    """`pdfimages -all`: extraction only, no validation, normalization or hashing."""
    with fresh_dir(scratch, "pdfimages-") as tmp:
        start = time.perf_counter()
        subprocess.run([exe, "-all", str(pdf), str(tmp / "img")], check=True)
        wall = time.perf_counter() - start
        files = sum(1 for _ in tmp.iterdir())
    return {"wall_s": wall, "files": files}


def check_counts(plain_counts: dict[str, Any], sample: Sample, label: str) -> None:
    """Fail loudly when a Dagster run's manifest counts differ from the plain loop's."""
    if sample["counts"] != plain_counts:
        raise BenchError(f"{label}: counts {sample['counts']} != plain loop {plain_counts}")

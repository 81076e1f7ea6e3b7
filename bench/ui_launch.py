"""`python -m bench.ui_launch`: a UI launch of one month's report_manifest, from the Materialize
click to the moment the client sees the run's Success, and where the time outside the run goes.
Goal (issue 31): at most 5 s from click to Success on the monthly fixture.

How: `dagster dev` on a temporary DAGSTER_HOME holding the committed dagster_home/dagster.yaml
(bench/backfill_live.py: the queued run coordinator, dequeued every second), the intake sensor
switched off (it would launch its own run for the report). Each round puts the report in a
month's inbox folder that has never had one (so the run really stages and extracts), waits for
the instance to hold no run in progress (a sensor's run, e.g. manifest_table's, would compete),
and sends what the UI's Materialize button sends for one partition of a partitioned asset: the
partition's tags and config (`ConfigPartitionForAssetJobQuery`), then `launchPipelineExecution`
of the asset's job (`__ASSET_JOB`, as the UI picks it) with report_manifest and its checks
selected. It then polls the run's status through GraphQL (`--poll`, 0.1 s; the UI's run page is
pushed its events instead) until it reads SUCCESS. A first round, not counted, warms the servers.

The times come from the run's event log (one clock: every process is on this machine):
- launch → created: the click to the run's RUN_ENQUEUED event (the partition's config query,
  the launch mutation, the run's creation and submission to the queue);
- created → dequeued: RUN_ENQUEUED to RUN_STARTING (the queue daemon's wait for its next
  dequeue and the dequeue itself; Dagster 1.13 writes no RUN_DEQUEUED event);
- STARTING → RUN_START, in two parts: the launch and the run worker's start (the code server
  spawns a new interpreter that imports Dagster and opens the instance), up to its "Started
  process for run" event, then the worker's load of the definitions and the run up to RUN_START;
- RUN_START → first step: the run's set-up (resources, plan, executor) to the first STEP_START;
- run duration: RUN_START → RUN_SUCCESS (the run record's start_time and end_time);
- RUN_SUCCESS → seen: until the client's poll reads SUCCESS;
- total: click → seen; outside the run: total minus the run's duration.
A run that does not succeed, or a month without exactly one manifest (all with the same
counts), voids the result (exit 2).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import dagster as dg

from bench import common
from bench.backfill import EMBEDDED, FIXTURE, embedded_home, keep_logs, month_names
from bench.backfill_live import REPOSITORY, Live, dagster_dev, month_counts, wait
from bench.common import ROOT, BenchError
from report_pipeline.core.storage.local_store import LocalStore

GOAL_S = 5.0
ASSET = ["report_manifest"]
# What the UI reads about the asset to build its launch: the jobs it is in and its checks.
ASSET_NODE = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) {
    ... on AssetNode { jobNames assetChecksOrError {
        ... on AssetChecks { checks { name jobNames } } } } } }"""
# The UI's own two requests for one partition (ui-core's ConfigFetch.tsx and
# LaunchAssetChoosePartitionsDialog.tsx, dagster-webserver 1.13.27), trimmed to what we read.
PARTITION_CONFIG = """query ConfigPartitionForAssetJobQuery($repositoryName: String!,
    $repositoryLocationName: String!, $jobName: String!, $partitionName: String!,
    $assetKeys: [AssetKeyInput!]!) {
  pipelineOrError(params: {pipelineName: $jobName, repositoryName: $repositoryName,
      repositoryLocationName: $repositoryLocationName}) {
    ... on Pipeline { partition(partitionName: $partitionName, selectedAssetKeys: $assetKeys) {
        runConfigOrError { ... on PartitionRunConfig { yaml } }
        tagsOrError { ... on PartitionTags { results { key value } } } } } } }"""
LAUNCH = """mutation LaunchPipelineExecution($executionParams: ExecutionParams!) {
  launchPipelineExecution(executionParams: $executionParams) {
    __typename ... on LaunchRunSuccess { run { id } } ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } } ... on Error { message } } }"""
RUN_STATUS = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""
IN_PROGRESS = """query { runsOrError(filter: {statuses: [QUEUED, NOT_STARTED, STARTING, STARTED,
    CANCELING]}) { ... on Runs { results { runId jobName } } } }"""
ENDED = {"SUCCESS", "FAILURE", "CANCELED"}
MARKS = ("enqueued", "starting", "process", "started", "first_step", "success")

# (label, from mark, to mark): the rows the benchmark prints, in order
SEGMENTS = [
    ("launch call → run created", "click", "enqueued"),
    ("  of which the UI's two requests", "click", "launched"),
    ("created → dequeued (STARTING)", "enqueued", "starting"),
    ("STARTING → RUN_START", "starting", "started"),
    ("  launch, worker spawn, Dagster import, instance", "starting", "process"),
    ("  definitions load → RUN_START", "process", "started"),
    ("RUN_START → first step start", "started", "first_step"),
    ("run duration (RUN_START → RUN_SUCCESS)", "started", "success"),
    ("RUN_SUCCESS → client sees Success", "success", "seen"),
    ("total: click → Success", "click", "seen"),
]


def run_marks(instance: dg.DagsterInstance, run_id: str) -> tuple[dict[str, float], list]:
    """The first timestamp of each lifecycle mark from the run's event log, and every event up
    to the first step's start (seconds after RUN_ENQUEUED, type, message) for `--events`."""
    names = {"PIPELINE_ENQUEUED": "enqueued", "PIPELINE_STARTING": "starting",
             "PIPELINE_START": "started", "STEP_START": "first_step",
             "PIPELINE_SUCCESS": "success"}  # fmt: skip
    marks: dict[str, float] = {}
    early = []
    for record in instance.get_records_for_run(run_id, limit=100_000).records:
        entry = record.event_log_entry
        kind = entry.dagster_event.event_type_value if entry.dagster_event else "log"
        name = names.get(kind)
        if name and name not in marks:
            marks[name] = entry.timestamp
        if kind == "ENGINE_EVENT" and entry.message.startswith("Started process for run"):
            marks.setdefault("process", entry.timestamp)
        if "first_step" not in marks or name == "first_step":
            early.append((entry.timestamp, kind, entry.message[:90]))
    start = marks.get("enqueued", 0.0)
    return marks, [(round(t - start, 3), kind, text) for t, kind, text in early]


class UiLaunch:
    def __init__(self, live: Live, instance: dg.DagsterInstance, args: argparse.Namespace):
        self.live, self.instance, self.args = live, instance, args
        node = live.graphql(ASSET_NODE, {"key": {"path": ASSET}})["assetNodeOrError"]
        # the UI's getCommonJob with one asset and no preferred job: the first of its jobs
        self.job = node["jobNames"][0]
        self.checks = [{"name": c["name"], "assetKey": {"path": ASSET}}
                       for c in node["assetChecksOrError"]["checks"]
                       if not c["jobNames"] or self.job in c["jobNames"]]  # fmt: skip

    def idle(self) -> None:
        """No run in progress (a sensor's run from the round before would share the cores)."""

        def none_running() -> bool:
            return not self.live.graphql(IN_PROGRESS)["runsOrError"]["results"]

        wait(none_running, "the instance to have no run in progress", 600, self.live.log)

    def click(self, month: str) -> dict[str, Any]:
        """One launch as the UI sends it, then poll until SUCCESS; the marks of the run."""
        click = time.time()
        asked = {**REPOSITORY, "jobName": self.job, "partitionName": month,
                 "assetKeys": [{"path": ASSET}]}  # fmt: skip
        config = self.live.graphql(PARTITION_CONFIG, asked)["pipelineOrError"]["partition"]
        tags = [{"key": t["key"], "value": t["value"]} for t in config["tagsOrError"]["results"]]
        params = {
            "mode": "default",
            "executionMetadata": {"tags": tags},
            "runConfigData": config["runConfigOrError"]["yaml"] or "{}",
            "selector": {**REPOSITORY, "pipelineName": self.job,
                         "assetSelection": [{"path": ASSET}], "assetCheckSelection": self.checks},
        }  # fmt: skip
        result = self.live.graphql(LAUNCH, {"executionParams": params})["launchPipelineExecution"]
        launched = time.time()
        if result["__typename"] != "LaunchRunSuccess":
            raise BenchError(f"launch refused for {month}: {result}")
        run_id = result["run"]["id"]
        while True:
            status = self.live.graphql(RUN_STATUS, {"id": run_id})["runOrError"]["status"]
            if status in ENDED:
                break
            if time.time() - click > self.args.timeout:
                raise BenchError(f"run {run_id} ({month}) not finished after {self.args.timeout} s")
            time.sleep(self.args.poll)
        seen = time.time()
        if status != "SUCCESS":
            raise BenchError(f"run {run_id} ({month}) ended {status}; see {self.live.log}")
        marks, early = run_marks(self.instance, run_id)
        if missing := set(MARKS) - marks.keys():
            raise BenchError(f"run {run_id} has no {sorted(missing)} event")
        record = self.instance.get_run_record_by_id(run_id)
        assert record is not None
        return {"month": month, "run_id": run_id, "click": click, "launched": launched,
                "seen": seen, **marks, "record_created": record.create_timestamp.timestamp(),
                "record_start": record.start_time, "record_end": record.end_time,
                "early_events": early}  # fmt: skip


def segments(round_: dict[str, Any]) -> dict[str, float]:
    found = {label: round_[b] - round_[a] for label, a, b in SEGMENTS}
    found["outside the run"] = found[SEGMENTS[-1][0]] - found[SEGMENTS[-3][0]]
    return found


def check_manifests(store: LocalStore, months: list[str]) -> dict:
    """Exactly one manifest per month, all with the same counts: the counts."""
    counts = month_counts(store, months)
    if any(c != counts[0] for c in counts):
        raise BenchError(f"the months' manifest counts differ: {counts}")
    return counts[0]


def measure(root: Path, args: argparse.Namespace, log) -> list[dict[str, Any]]:
    home, env = embedded_home(root, args.instance)
    months = month_names(args.rounds + 1)  # the first: the warm-up round
    rounds = []
    with dagster_dev(root, env) as live, dg.DagsterInstance.from_config(str(home)) as instance:
        live.stop_sensor("new_report_sensor")  # before any report arrives
        ui = UiLaunch(live, instance, args)
        log(f"launching {ui.job} with {ASSET[0]} and {len(ui.checks)} checks, one month a round")
        for i, month in enumerate(months):
            (root / "inbox" / month).mkdir()
            shutil.copyfile(args.report, root / "inbox" / month / args.report.name)
            ui.idle()
            quiet = live.cpu()
            time.sleep(args.settle)
            before = live.cpu()
            one = ui.click(month)
            after = live.cpu()
            # CPU seconds by process over the round, and dagster dev's idle rate just before it
            one["cpu_s"] = {
                k: after[k] - before.get(k, 0.0) for k in after if after[k] > before.get(k, 0.0)
            }
            one["idle_cpu_per_s"] = (sum(before.values()) - sum(quiet.values())) / args.settle
            one["segments"] = segments(one)
            label = "warm-up" if i == 0 else f"round {i}"
            said = (f"{SHORT[k]} {v:.2f}" for k, v in one["segments"].items() if k in SHORT)
            log(f"  {label} {month}: " + ", ".join(said))
            if args.events:
                cpu = ", ".join(f"{k} {v:.2f}" for k, v in sorted(one["cpu_s"].items()))
                log(f"      CPU s: {cpu}; idle before: {one['idle_cpu_per_s']:.2f} CPU s/s")
                for offset, kind, text in one["early_events"]:
                    log(f"      {offset:7.3f} {kind:<24} {text}")
            rounds.append(one)
        ui.idle()
    check_manifests(LocalStore(root / "store"), months)
    return rounds


SHORT = {
    "launch call → run created": "created",
    "created → dequeued (STARTING)": "dequeued",
    "STARTING → RUN_START": "worker",
    "RUN_START → first step start": "set-up",
    "run duration (RUN_START → RUN_SUCCESS)": "run",
    "RUN_SUCCESS → client sees Success": "seen",
    "total: click → Success": "total",
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m bench.ui_launch", description=__doc__,
                                     formatter_class=raw)  # fmt: skip
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument("--report", type=Path, default=FIXTURE,
                        help="the PDF each month gets (default: the monthly fixture)")  # fmt: skip
    parser.add_argument("--instance", type=Path, default=EMBEDDED,
                        help="the dagster.yaml (default: the committed one)")  # fmt: skip
    parser.add_argument("--poll", type=float, default=0.1, help="client poll interval (0.1 s)")
    parser.add_argument(
        "--settle",
        type=float,
        default=1.0,
        help="seconds to wait, with no run in progress, before each click",
    )
    parser.add_argument("--timeout", type=float, default=300, help="seconds for one run")
    parser.add_argument("--events", action="store_true",
                        help="list each run's events up to its first step")  # fmt: skip
    parser.add_argument(
        "--target",
        type=float,
        default=None,
        help=f"exit 1 if the median total is above this (the goal: {GOAL_S} s)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.poll <= 0:
        parser.error("--rounds must be at least 1 and --poll above 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop dagster dev on the way out
    load = os.getloadavg()
    print(f"UI launch of {ASSET[0]} for one month, {args.report.name}, {args.rounds} rounds; "
          f"load {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="report-bench-ui-launch-") as scratch:
        try:
            rounds = measure(Path(scratch), args, lambda line: print(line, flush=True))
        except BenchError as error:
            kept = keep_logs(Path(scratch), args.out)
            print(f"BENCHMARK INVALID: {error}" + (f"; the servers' logs: {kept}" if kept else ""),
                  file=sys.stderr)  # fmt: skip
            return 2
    timed = rounds[1:]
    medians = {k: median(r["segments"][k] for r in timed) for k in timed[0]["segments"]}
    end_load = os.getloadavg()
    print(f"\nmedians of {len(timed)} rounds (seconds; load at the end {end_load[0]:.2f} / "
          f"{end_load[1]:.2f} / {end_load[2]:.2f}):")  # fmt: skip
    total = medians["total: click → Success"]
    for label, seconds in medians.items():
        print(f"  {label:<48} {seconds:6.2f}  {seconds / total:5.0%}")
    met = "met" if total <= GOAL_S else "NOT met"
    print(f"goal: click → Success ≤ {GOAL_S:.0f} s: {met} ({total:.2f} s, of which the run "
          f"{medians['run duration (RUN_START → RUN_SUCCESS)']:.2f} s)")  # fmt: skip
    record = {"report": args.report.name, "instance": str(args.instance), "goal_s": GOAL_S,
              "medians_s": medians, "rounds": rounds, "poll_s": args.poll,
              "load_start": load, "load_end": end_load, "machine": common.machine()}  # fmt: skip
    print(f"written {common.write_json(args.out, record, prefix='ui-launch-')}")
    if args.target is not None and total > args.target:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

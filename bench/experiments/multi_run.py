"""`python -m bench.experiments.multi_run`: Dagster's own multi-month backfill
(`BackfillPolicy.multi_run(max_partitions_per_run=N)`) against one run per month (issue 31).

An experiment, not the product: `dagster dev` (bench/backfill_live.py, as bench.backfill runs it)
on a throwaway DAGSTER_HOME holding the committed dagster_home/dagster.yaml, serving only the
experiment's code location (bench/experiments/multi_run_defs.py: `no_policy`, `one_per_run`,
`many_per_run_3`, `many_per_run_6`, each doing the plain loop's work per month into a fresh
store). Each round launches a 6-month asset backfill of each asset through GraphQL, as the UI
does, alternating; CPU per report is that of every process in dagster dev's group and the
children they reaped (run workers), launch to completed, as bench.backfill measures it, against
the plain loop's CPU for the same report in this process. Each month's materialization must
hold the plain loop's counts, or the result is void (exit 2).

It also reports what Dagster 1.13 records for a ranged run: materializations per partition, the
check records, and the run's partition tags (the one-run-per-month guard keys on
`dagster/partition`).
"""

import argparse
import os
import signal
import sys
import tempfile
from pathlib import Path
from statistics import median

import dagster as dg

from bench import common, measure
from bench.backfill import FIXTURE, embedded_home
from bench.backfill_live import Live, dagster_dev
from bench.backfill_timeline import timeline
from bench.common import ROOT, BenchError
from bench.experiments.multi_run_defs import CHECK, MONTHS, POLICIES

LAUNCH = """mutation($b: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $b) {
    __typename ... on LaunchBackfillSuccess { backfillId } ... on Error { message } } }"""
WORKSPACE = """load_from:
  - python_module:
      module_name: bench.experiments.multi_run_defs
      location_name: multi_run
      working_directory: {root}
"""


def launch(live: Live, asset: str, months: list[str]) -> str:
    params = {"partitionNames": months, "assetSelection": [{"path": [asset]}]}
    launched = live.graphql(LAUNCH, {"b": params})["launchPartitionBackfill"]
    if launched["__typename"] != "LaunchBackfillSuccess":
        raise BenchError(f"backfill refused: {launched}")
    return launched["backfillId"]


def recorded(home: Path, asset: str, backfill_id: str, counts: dict) -> dict:
    """What the instance holds for the backfill: its runs' partition tags, one materialization per
    month with the plain loop's counts (else BenchError), and the check records by status."""
    key = dg.AssetKey(asset)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        run_ids = {r.dagster_run.run_id for r in records}
        tags = [sorted(k for k in r.dagster_run.tags if "partition" in k) for r in records]
        found = {}
        for run_id in run_ids:
            materialized = dg.DagsterEventType.ASSET_MATERIALIZATION
            for event in instance.all_logs(run_id, of_type=materialized):
                m = event.asset_materialization
                found.setdefault(m.partition, []).append(
                    {
                        k[len("counts_") :]: v.value
                        for k, v in m.metadata.items()
                        if k.startswith("counts_")
                    }  # fmt: skip
                )
        check_key = dg.AssetCheckKey(key, CHECK)
        history = instance.event_log_storage.get_asset_check_execution_history(check_key, 200)
    months = MONTHS.get_partition_keys()
    if sorted(found) != months or any(len(v) != 1 or v[0] != counts for v in found.values()):
        raise BenchError(f"{asset}: materializations per month differ from the plain loop's")
    checks: dict[str, int] = {}
    for row in history:
        if row.run_id in run_ids:
            label = f"{row.status.value} {'per month' if row.partition else 'no partition'}"
            checks[label] = checks.get(label, 0) + 1
    return {
        "runs": len(run_ids),
        "run_partition_tags": tags[0] if tags else [],
        "materializations": sum(len(v) for v in found.values()),
        "check_records": checks,
    }


def one_backfill(live: Live, home: Path, asset: str, counts: dict, tick_wait: float) -> dict:
    months = MONTHS.get_partition_keys()
    live.before_backfill_tick(tick_wait)
    before = live.cpu()
    backfill_id = launch(live, asset, months)
    found = live.wait_backfill(backfill_id, 900)
    after = live.cpu()
    cpu = {role: after.get(role, 0.0) - before.get(role, 0.0) for role in after}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        t = timeline(instance, backfill_id, found["timestamp"], found["endTimestamp"])
    return {"asset": asset, "cpu_s": cpu, "cpu_per_report_s": sum(cpu.values()) / len(months),
            "wall_s": t["marked_completed_s"], "runs_span_s": t["runs_span_s"],
            "median_run_body_s": t["median_run_body_s"],
            **recorded(home, asset, backfill_id, counts)}  # fmt: skip


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m bench.experiments.multi_run",
                                     description=__doc__, formatter_class=raw)  # fmt: skip
    parser.add_argument("--report", type=Path, default=FIXTURE, help="the PDF of every month")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the variants (2)")
    parser.add_argument(
        "--tick-wait",
        type=float,
        default=15.0,
        help="launch this many seconds before the backfill daemon's loop (15)",
    )
    parser.add_argument("--assets", nargs="+", choices=list(POLICIES), default=list(POLICIES),
                        help="variants, paired against the first (default: all four)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()
    print(f"multi_run: {args.report.name}, 6 months, {args.rounds} rounds of "
          f"{', '.join(args.assets)}; "
          f"load {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}", flush=True)  # fmt: skip
    samples: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="report-bench-multi-run-") as scratch:
        root = Path(scratch)
        try:
            measure.plain(args.report, root)  # warm-up
            plain = [measure.plain(args.report, root) for _ in range(2)]
            counts = plain[0]["counts"]
            home, env = embedded_home(root, ROOT / "dagster_home" / "dagster.yaml")
            (root / "months").mkdir()
            env.update(MULTI_RUN_REPORT=str(args.report.resolve()),
                       MULTI_RUN_SCRATCH=str(root / "months"))  # fmt: skip
            workspace = root / "workspace.yaml"
            workspace.write_text(WORKSPACE.format(root=ROOT))
            with dagster_dev(root, env, workspace=workspace) as live:
                for round_no in range(args.rounds):
                    for asset in args.assets:
                        sample = one_backfill(live, home, asset, counts, args.tick_wait)
                        samples.append({"round": round_no, **sample})
                        print(f"  round {round_no} {asset}: {sample['cpu_per_report_s']:.2f} s "
                              f"CPU per report, wall {sample['wall_s']:.1f} s, runs "
                              f"{sample['runs']}, span {sample['runs_span_s']:.1f} s",
                              flush=True)  # fmt: skip
            plain += [measure.plain(args.report, root) for _ in range(2)]
        except BenchError as error:
            print(f"BENCHMARK INVALID: {error}", file=sys.stderr)
            return 2
    plain_cpu = median(s["cpu_s"] for s in plain)
    plain_wall = median(s["wall_s"] for s in plain)
    end = os.getloadavg()
    print(f"plain loop: {plain_cpu:.2f} s CPU, {plain_wall:.2f} s wall per report "
          f"(median of {len(plain)})")  # fmt: skip
    summary = {}
    for asset in args.assets:
        mine = [s for s in samples if s["asset"] == asset]
        cpu = median(s["cpu_per_report_s"] for s in mine)
        by_role: dict[str, float] = {}
        for s in mine:
            for role, seconds in s["cpu_s"].items():
                by_role[role] = by_role.get(role, 0.0) + seconds / 6 / len(mine)
        summary[asset] = {"cpu_per_report_s": cpu, "cpu_ratio": cpu / plain_cpu,
                          "wall_s": median(s["wall_s"] for s in mine),
                          "runs_span_s": median(s["runs_span_s"] for s in mine),
                          "cpu_per_report_by_process_s": by_role}  # fmt: skip
        base = {s["round"]: s["cpu_per_report_s"] for s in samples if s["asset"] == args.assets[0]}
        paired = median(s["cpu_per_report_s"] / base[s["round"]] for s in mine)
        summary[asset][f"paired_cpu_vs_{args.assets[0]}"] = paired
        first = mine[0]
        print(
            f"{asset}: {cpu:.2f} s CPU per report ({cpu / plain_cpu:.2f}x the plain loop), "
            f"wall {summary[asset]['wall_s']:.1f} s (runs' span "
            f"{summary[asset]['runs_span_s']:.1f} s); {first['runs']} runs, "
            f"{first['materializations']} materializations, checks {first['check_records']}, "
            f"run partition tags {first['run_partition_tags']}; paired against {args.assets[0]} "
            f"{paired:.2f}x; by process: "
            + ", ".join(f"{k} {v:.2f}" for k, v in sorted(by_role.items()))
        )
    print(f"load at the end {end[0]:.2f} / {end[1]:.2f} / {end[2]:.2f}")
    record = {"report": args.report.name, "plain_cpu_s": plain_cpu, "plain_wall_s": plain_wall,
              "plain": plain, "samples": samples, "summary": summary, "load_start": load,
              "load_end": end, "machine": common.machine()}  # fmt: skip
    print(f"written {common.write_json(args.out, record, prefix='multi-run-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m bench.run_worker`: the CPU of one report's run in a fresh process, as the code server
starts each run worker under `dagster dev` (it spawns a new interpreter per run), against the same
report through `report-pipeline preview` in a fresh process (the loop with the same isolated
decoders, no Dagster).

Variants, each sample its own process, alternating, the order reversed every other round; CPU
is what `os.wait4` reports for the process and every child it reaped (walk, decoders, `tail`):
- `import`: `python -c "import report_pipeline.definitions"`, loading the code location;
- `empty_month`: `dagster asset materialize` of report_manifest and manifest_table for a month
  with no report: Dagster's whole fixed cost of a run (interpreter, imports, instance, run
  record, events, the month's checks), with nothing to extract;
- `preview`: `report-pipeline preview REPORT --out <fresh folder>`;
- `run`: the same materialization for a month holding REPORT.
Every sample gets a fresh store and work folder; all runs share one DAGSTER_HOME (the committed
dagster_home/dagster.yaml), warmed by one untimed run, as a dev instance is. A run whose
manifest counts differ from the preview's voids the result (exit 2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

from bench import common
from bench.common import ROOT, BenchError
from bench.measure import fresh_dir

VARIANTS = ["import", "empty_month", "preview", "run"]
FIXTURE = ROOT / "fixtures" / "pdfs" / "monthly_report.pdf"
MONTH, EMPTY_MONTH = "2025-01", "2025-02"
BIN = Path(sys.executable).parent


def timed(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of `argv` and the children it reaped; fails loudly."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            tail = err.read()[-3000:].decode(errors="replace")
            raise BenchError(f"{argv[0]} exited {proc.returncode}:\n{tail}")
    return usage.ru_utime + usage.ru_stime


class Bench:
    def __init__(self, scratch: Path, report: Path):
        self.scratch, self.report = scratch, report
        home = scratch / "dagster_home"
        home.mkdir()
        shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
        inbox = scratch / "inbox"
        (inbox / MONTH).mkdir(parents=True)
        (inbox / EMPTY_MONTH).mkdir()
        shutil.copyfile(report, inbox / MONTH / report.name)
        self.env = {**os.environ, "DAGSTER_HOME": str(home), "REPORT_PIPELINE_INBOX": str(inbox)}

    def _materialize(self, month: str) -> dict:
        """One run in a fresh store and work folder; the manifest's counts when it left one."""
        with fresh_dir(self.scratch, "run-") as where:
            env = {**self.env, "REPORT_PIPELINE_STORE": str(where / "store"),
                   "REPORT_PIPELINE_WORK": str(where / "work")}  # fmt: skip
            argv = [str(BIN / "dagster"), "asset", "materialize", "-m",
                    "report_pipeline.definitions", "--select", "report_manifest,manifest_table",
                    "--partition", month]  # fmt: skip
            cpu = timed(argv, env)
            if month == EMPTY_MONTH:
                return {"cpu_s": cpu}
            manifests = list((where / "store").rglob("manifest.json"))
            if len(manifests) != 1:
                raise BenchError(f"the run left {len(manifests)} manifests, not 1")
            return {"cpu_s": cpu, "counts": json.loads(manifests[0].read_bytes())["counts"]}

    def sample(self, variant: str) -> dict:
        if variant == "import":
            code = "import report_pipeline.definitions"
            return {"cpu_s": timed([sys.executable, "-c", code], self.env)}
        if variant == "preview":
            with fresh_dir(self.scratch, "preview-") as out:
                argv = [
                    str(BIN / "report-pipeline"),
                    "preview",
                    str(self.report),
                    "--out",
                    str(out),
                ]
                cpu = timed(argv, self.env)
                return {
                    "cpu_s": cpu,
                    "counts": json.loads((out / "manifest.json").read_bytes())["counts"],
                }
        return self._materialize(EMPTY_MONTH if variant == "empty_month" else MONTH)


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m bench.run_worker", description=__doc__,
                                     formatter_class=raw)  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--report", type=Path, default=FIXTURE, help="the PDF (default: fixture)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    samples: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    try:
        with tempfile.TemporaryDirectory(prefix="run-worker-bench-") as scratch:
            bench = Bench(Path(scratch), args.report.resolve())
            bench.sample("run")  # untimed: creates the instance's storage
            for i in range(args.rounds):
                order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
                done = {v: bench.sample(v) for v in order}
                if done["run"]["counts"] != done["preview"]["counts"]:
                    raise BenchError(f"run counts {done['run']['counts']} != preview's "
                                     f"{done['preview']['counts']}")  # fmt: skip
                for variant, one in done.items():
                    samples[variant].append(one)
                said = "  ".join(f"{v} {s['cpu_s']:.2f} s" for v, s in done.items())
                print(f"  round {i + 1}: {said}", flush=True)
    except BenchError as error:
        print(f"\nBENCHMARK INVALID: {error}", file=sys.stderr)
        return 2
    cpu = {v: [s["cpu_s"] for s in runs] for v, runs in samples.items()}
    paired = [r / p for r, p in zip(cpu["run"], cpu["preview"], strict=True)]
    floor = [e / p for e, p in zip(cpu["empty_month"], cpu["preview"], strict=True)]
    print(f"\n{args.report.name}: CPU seconds per fresh process, medians of {args.rounds} rounds")
    print("  " + "  ".join(f"{v} {median(values):.2f} s" for v, values in cpu.items()))
    print(f"  run / preview {median(paired):.2f}x; a run with nothing to do (empty_month) costs "
          f"{median(floor):.2f}x the preview's CPU (paired)")  # fmt: skip
    record = {"machine": common.machine(), "report": str(args.report), "samples": samples,
              "run_over_preview": paired, "empty_month_over_preview": floor}  # fmt: skip
    print(f"written {common.write_json(args.out, record, prefix='run-worker-')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

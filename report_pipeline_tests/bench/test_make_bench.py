"""Every benchmark `make bench` runs, run here at its smallest size, so `make bench` does not rot:
each exits 0, prints its table and writes its JSON record. The backfill's own plumbing test is
test_backfill.py (a real one-month backfill)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
SMALL_PDF = "fixtures/pdfs/image_paths.pdf"  # 9 pages, 13 draws: every way a page draws
SMALLEST = {  # module -> its arguments at the smallest size (then `--out <folder>`)
    "bench.run": ["--reports", SMALL_PDF, "--repeat", "1", "--no-per-page"],
    "bench.production": ["--reports", SMALL_PDF, "--repeat", "1"],
    "bench.s3_latency": ["--report", SMALL_PDF, "--repeat", "1", "--latency-ms", "30"],
    "bench.cold": ["--report", SMALL_PDF, "--rounds", "1"],
    "bench.run_worker": ["--report", SMALL_PDF, "--rounds", "1"],
    "bench.janitor": ["--repeat", "1", "--scale", "0.01"],
    "bench.intake_sensor": ["--reports", "50", "--repeat", "1"],
    "bench.ui_launch": ["--report", SMALL_PDF, "--rounds", "1"],  # `dagster dev`: a warm-up + 1
}
ELSEWHERE = {"bench.backfill": "test_backfill.py"}
# Round trips a run on S3 makes one after another, besides image uploads (docs/performance.md,
# "Through a real bucket's latency"): 19 on SMALL_PDF on 2026-12-06 after each step's last
# writes went beside its outputs (22-23 before, 24 before the cuts of that morning, ~40 before
# the first ones).
SEQUENTIAL_S3_WAITS = 21
WRITES_NO_RECORD = {"bench.intake_sensor"}


def make_bench_modules() -> list[str]:
    """The modules the Makefile's `bench` target runs, in order."""
    text = (REPO / "Makefile").read_text()
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert recipe, "the Makefile has no bench target"
    return re.findall(r"python -m (bench\.\w+)", recipe.group(1))


def test_every_benchmark_in_make_bench_has_a_plumbing_run():
    assert sorted(make_bench_modules()) == sorted({*SMALLEST, *ELSEWHERE})
    assert all((Path(__file__).parent / test).exists() for test in ELSEWHERE.values())


@pytest.mark.parametrize("module", sorted(SMALLEST))
def test_the_benchmark_runs_at_its_smallest_size(module: str, tmp_path: Path):
    out = ["--out", str(tmp_path)] if module not in WRITES_NO_RECORD else []
    command = [sys.executable, "-m", module, *SMALLEST[module], *out]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "printed nothing"
    if module not in WRITES_NO_RECORD:
        assert len(list(tmp_path.glob("*.json"))) == 1, done.stdout[-2000:]
    if module == "bench.s3_latency":  # a count, not a time: what a run waits for one by one
        (record,) = tmp_path.glob("*.json")
        others = json.loads(record.read_text())["report"]["rows"]["30 ms"]["others"]
        assert others <= SEQUENTIAL_S3_WAITS, done.stdout[-2000:]

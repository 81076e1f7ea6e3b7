"""The backfill benchmark's plumbing, so `make bench` does not rot: its arguments, and one
real one-month backfill (`dagster dev`, the UI's GraphQL launch, the timeline, the JSON). The
backfill alone takes at least two of the backfill daemon's 30 s loops: ~80 s in all."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import backfill

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]


def test_months_run_in_calendar_order_across_a_year_end():
    assert backfill.month_names(3, "2025-11") == ["2025-11", "2025-12", "2026-01"]
    assert len(backfill.month_names(12)) == 12


@pytest.mark.parametrize(
    "bad", [["--months", "0"], ["--plain-repeat", "0"], ["--kind", "x"], ["--tick-wait", "30"]]
)
def test_bad_arguments_are_refused_with_a_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as exited:
        backfill.parse_args(bad)
    assert exited.value.code == 2


def test_a_void_benchmark_keeps_the_servers_logs(tmp_path: Path):
    """The scratch folder goes with the benchmark; the logs that say why it was void do not."""
    root, out = tmp_path / "scratch", tmp_path / "out"
    (root / "workers").mkdir(parents=True)
    (root / "dagster-dev.log").write_text("500 Internal Server Error")
    (root / "workers" / "celery.log").write_text("worker")
    kept = backfill.keep_logs(root, out)
    assert kept.parent == out and kept.name.startswith("backfill-invalid-")
    assert sorted(p.name for p in kept.iterdir()) == ["dagster-dev.log", "workers_celery.log"]
    assert (kept / "dagster-dev.log").read_text() == "500 Internal Server Error"
    assert backfill.keep_logs(tmp_path / "empty", out) is None


def test_a_one_month_backfill_prints_its_throughput_as_json(tmp_path: Path):
    command = [sys.executable, "-m", "bench.backfill", "--months", "1", "--plain-repeat", "1",
               "--json", "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["months"] == 1 and result["kind"] == "job"
    assert result["throughput_ratio"] == pytest.approx(result["plain_s"] / result["wall_s"])
    (run,) = result["runs"]
    assert run["partition"] == "2025-01" and run["status"] == "SUCCESS"
    assert 0 < run["created"] <= run["starting"] < run["started"] < run["ended"]
    assert result["last_run_ended_s"] <= result["marked_completed_s"]
    assert "throughput_ratio" in done.stderr  # the human summary goes to stderr with --json
    assert list(tmp_path.glob("backfill-*.json"))

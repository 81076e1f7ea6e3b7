"""`uv run python -m bench.intake_sensor`: what a `new_report_sensor` tick costs on a big inbox.

Builds an inbox of N reports (default 10,000) over every month from 2024-01 to 2026-10: in each
month the newest file is a full monthly report (fixtures/pdfs/monthly_report.pdf, 2 MB, 140
pages) and the rest are small older revisions; every file has distinct bytes. Then it evaluates
the real sensor, on a real sqlite instance, tick after tick, carrying the cursor as the daemon
does: the first tick (empty cursor, no arrivals ledger: every file is hashed once) and the ticks
that finish the backlog (a tick admits at most MAX_READS_PER_TICK reports), quiet ticks, a tick
after one new report arrives, one after a report is overwritten in place (same name, same mtime),
and a full sweep (which now only retries refusals that may pass). It prints each tick's median
time, how many month folders it listed, how many files it hashed and how many reports it read
(admitted), and the ratios to the first tick. The first row is a tick on an empty inbox: what
Dagster itself spends per tick (building the sensor's resources), which every tick pays.
`settle_seconds=0`, so no tick waits for files to settle.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg

from bench.common import ROOT
from report_pipeline.core.intake import month_report, watch
from report_pipeline.core.intake import sources as core_sources
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports import sensors

REPORT = (ROOT / "fixtures" / "pdfs" / "monthly_report.pdf").read_bytes()
SMALL = (ROOT / "fixtures" / "pdfs" / "no_images.pdf").read_bytes()
PAST = 1_700_000_000
COUNTS = {"listed": 0, "hashed": 0, "read": 0}


def months() -> list[str]:
    return [f"{y}-{m:02d}" for y in (2024, 2025, 2026) for m in range(1, 13)][:34]


def build_inbox(inbox: Path, reports: int) -> None:
    """Distinct bytes everywhere (a trailing comment); settled times (old mtimes)."""
    folders = months()
    for n in range(reports):
        month = folders[n % len(folders)]
        newest = n >= reports - len(folders)
        path = inbox / month / f"report-{n:05d}.pdf"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((REPORT if newest else SMALL) + f"\n% bench {n}\n".encode())
        os.utime(path, (PAST + n, PAST + n))
    for folder in inbox.iterdir():
        os.utime(folder, (PAST, PAST))


def count_work() -> None:
    """Count month folders listed, files hashed and reports read (admitted) by wrapping the
    three calls."""
    entries, admit, content_hash = (
        core_sources.LocalInboxSource.entries, sensors.admit, month_report.content_hash,
    )  # fmt: skip

    def counted_hash(*args, **kwargs):
        COUNTS["hashed"] += 1
        return content_hash(*args, **kwargs)

    def counted_entries(self, month):
        COUNTS["listed"] += 1
        return entries(self, month)

    def counted_admit(*args, **kwargs):
        COUNTS["read"] += 1
        return admit(*args, **kwargs)

    core_sources.LocalInboxSource.entries = counted_entries
    sensors.admit = counted_admit
    month_report.content_hash = counted_hash


def timed(tick: Callable[[], dg.SensorResult], repeat: int) -> tuple[float, dict, int]:
    samples, requests = [], 0
    for _ in range(repeat):
        COUNTS.update(listed=0, hashed=0, read=0)
        with contextlib.redirect_stderr(io.StringIO()):  # the tick's log: a line per request
            start = time.perf_counter()
            result = tick()
            samples.append(time.perf_counter() - start)
        requests = len(result.run_requests)
    return statistics.median(samples), dict(COUNTS), requests


def catch_up(tick: Callable[[], dg.SensorResult]) -> tuple[str, float, dict, int]:
    """The ticks after the first until the backlog is read (a tick reads at most
    MAX_READS_PER_TICK reports); their total time, reads and requests."""
    total, counts, requests, ticks = 0.0, {"listed": 0, "hashed": 0, "read": 0}, 0, 0
    while True:
        seconds, tick_counts, tick_requests = timed(tick, 1)
        if not tick_counts["read"]:
            break
        ticks += 1
        total += seconds
        requests += tick_requests
        counts = {k: counts[k] + tick_counts[k] for k in counts}
    return f"first look: {ticks} more ticks", total, counts, requests


def run(reports: int, repeat: int) -> list[tuple[str, float, dict, int]]:
    with tempfile.TemporaryDirectory() as tmp, dg.instance_for_test() as instance:
        inbox = Path(tmp) / "inbox"
        resources = {
            "inbox": InboxResource(root=str(inbox), settle_seconds=0),
            "store": StoreResource(root=f"{tmp}/store"),
            "settings": PipelineSettingsResource(work_root=f"{tmp}/work"),
        }
        state = {"cursor": None}

        def tick(cursor: str | None = None) -> dg.SensorResult:
            context = dg.build_sensor_context(
                instance=instance, cursor=cursor or state["cursor"], resources=resources
            )
            result = sensors.new_report_sensor(context)
            state["cursor"] = result.cursor
            return result

        inbox.mkdir()
        rows = [("empty inbox (Dagster's part)", *timed(tick, repeat))]
        state["cursor"] = None
        build_inbox(inbox, reports)
        rows.append(("first look: tick 1 (no cursor)", *timed(tick, 1)))
        rows.append(catch_up(tick))
        first, rest = rows[-2], rows[-1]
        both = {k: first[2][k] + rest[2][k] for k in first[2]}
        rows.append(("first look, all ticks", first[1] + rest[1], both, first[3] + rest[3]))
        rows.append(("quiet tick", *timed(tick, repeat)))
        new = inbox / "2026-10" / "arrived.pdf"
        new.write_bytes(REPORT + b"\n% a new revision\n")
        os.utime(new, (PAST + reports, PAST + reports))
        os.utime(new.parent, (PAST + 1, PAST + 1))  # arrived a while ago: the folder settled
        rows.append(("tick after 1 new report", *timed(tick, 1)))
        rows.append(("quiet tick again", *timed(tick, repeat)))
        rewritten = sorted((inbox / "2026-09").iterdir())[-1]  # the month's report, in place
        stamp = rewritten.stat().st_mtime_ns
        rewritten.write_bytes(REPORT + b"\n% corrected in place\n")
        os.utime(rewritten, ns=(stamp, stamp))
        os.utime(rewritten.parent, (PAST + 1, PAST + 1))
        rows.append(("tick after 1 in-place rewrite", *timed(tick, 1)))
        due = watch.Cursor.loads(state["cursor"])
        due.swept_ns = 0  # as if the last sweep was more than SWEEP_SECONDS ago
        rows.append(("full sweep (every 10 min)", *timed(lambda: tick(due.dumps()), 1)))
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.intake_sensor", description=__doc__)
    parser.add_argument("--reports", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15, help="quiet-tick samples (median)")
    args = parser.parse_args(argv)
    count_work()
    rows = run(args.reports, args.repeat)
    floor, first = rows[0][1], rows[3][1]
    print(f"new_report_sensor on an inbox of {args.reports:,} reports in {len(months())} months")
    print(f"  {'tick':30} {'median ms':>9} {'above empty':>11} {'folders':>7} {'hashed':>6} "
          f"{'reports':>7} {'runs':>4} {'first look ÷ this':>17}")  # fmt: skip
    for name, seconds, counts, requests in rows:
        above = f"{(seconds - floor) * 1000:.1f}" if seconds != floor else ""
        print(f"  {name:30} {seconds * 1000:9.1f} {above:>11} {counts['listed']:7} "
              f"{counts['hashed']:6} {counts['read']:7} {requests:4} "
              f"{first / seconds:16.0f}×")  # fmt: skip
    print("  above empty: ms over the empty-inbox tick (what Dagster spends on every tick)")
    print("  folders: month folders listed; hashed: files hashed to learn their content (the")
    print("  arrivals rule); reports: reports read (streamed, hashed, checked) to be admitted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

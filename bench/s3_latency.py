"""`python -m bench.s3_latency`: what a real bucket's latency does to a run on the production
configuration, as paired ratios (goal: at most 1.25x with 30 ms a round trip).

The same run as `bench.production` (Postgres, S3 store, inbox and IO manager, on moto's server in
its own process), once straight to moto and once through `devstack/latency_proxy.py`, which holds
every round trip `--latency-ms` before passing it on (30 and 100 by default), alternating round by
round. Per variant: the run's duration and wall, the round trips the run made (the proxy's log)
and how many of them ran one after another (`waves`: the trips that began with no other in
flight, from the moment the delay began; the latency a run pays is about waves x delay) and, of
those, `others`: the waves not opened by an archived image's upload (the uploads run behind the
decoders; the others are what the run waits for one after another). `--trips` prints the waves'
requests.
The delay is the stand-in's only change: moto answers as fast with and without it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from statistics import median
from urllib.parse import urlsplit

from bench import common
from bench.common import ROOT, BenchError
from bench.production import production
from devstack import latency_proxy, local_s3
from devstack.local_postgres import local_server

GOAL = 1.25  # run duration with 30 ms a round trip / straight to the local server (issue 31)


def _kind(trip: latency_proxy.Trip) -> str:
    """A request's method and the first part of its key, e.g. "PUT archive", "GET dagster"."""
    parts = trip.first_line.split(" ")
    if len(parts) < 2 or not parts[0].isalpha():
        return "(body or continue)"
    path = urlsplit(parts[1]).path.strip("/").split("/")
    query = urlsplit(parts[1]).query
    what = path[1] if len(path) > 1 else ("list" if "list-type" in query else "bucket")
    return f"{parts[0]} {what}"


def _first_waves(trips: list[latency_proxy.Trip]) -> list[tuple[str, bool]]:
    """The request that opens each wave, in order (what the run waited for, one after another),
    and whether it is an archived object's upload (as `latency_proxy.waves` counts them)."""
    opened, busy_until = [], float("-inf")
    for trip in sorted(trips, key=lambda t: t.started):
        if trip.started >= busy_until:
            opened.append((_kind(trip), _is_upload(trip)))
        busy_until = max(busy_until, trip.ended)
    return opened


def _is_upload(trip: latency_proxy.Trip) -> bool:
    """An archived object's upload (an image, or quarantine evidence): these run behind the
    decoders, 16 at a time, and are not what a run waits for one after another."""
    parts = trip.first_line.split(" ")
    path = urlsplit(parts[1]).path if len(parts) > 1 else ""
    return parts[0] == "PUT" and ("/images/" in path or "/quarantine/" in path)


def bench(pdf: Path, scratch: Path, server, endpoint: str, delays: list[float],
          repeat: int) -> dict:  # fmt: skip
    port = urlsplit(endpoint).port
    samples: dict[str, list[dict]] = defaultdict(list)
    for i in range(repeat + 1):  # round 0: untimed warm-up
        done = {}
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        done["straight"] = production(pdf, scratch, server, endpoint)
        for delay in delays:
            with latency_proxy.latency_proxy(port, delay) as proxy:
                os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
                try:
                    sample = production(pdf, scratch, server, endpoint)
                finally:
                    os.environ["AWS_ENDPOINT_URL"] = endpoint
                trips = proxy.take_trips()
            opened = _first_waves(trips)
            sample.update(trips=len(trips), waves=len(opened), opened=[k for k, _ in opened],
                          others=sum(not upload for _, upload in opened))  # fmt: skip
            done[f"{delay * 1000:.0f} ms"] = sample
        label = "warm-up" if i == 0 else f"round {i}/{repeat}"
        times = "  ".join(f"{n} {s['run_s']:.2f}s" for n, s in done.items())
        print(f"  {label}: {times}  (load {os.getloadavg()[0]:.1f})")
        for name, sample in done.items():
            if i:
                samples[name].append(sample)
    straight = samples["straight"]
    rows = {}
    for name, runs in samples.items():
        rows[name] = {
            "run_s": median(s["run_s"] for s in runs),
            "wall_s": median(s["wall_s"] for s in runs),
            "paired_ratio": median(
                s["run_s"] / b["run_s"] for s, b in zip(runs, straight, strict=True)
            ),  # fmt: skip
            "trips": median(s.get("trips", 0) for s in runs),
            "waves": median(s.get("waves", 0) for s in runs),
            "others": median(s.get("others", 0) for s in runs),
        }
    slowest = samples[f"{delays[0] * 1000:.0f} ms"][-1] if delays else {}
    return {"name": pdf.name, "rows": rows, "opened": slowest.get("opened", []),
            "samples": {n: [{k: v for k, v in s.items() if k != "opened"} for s in r]
                        for n, r in samples.items()}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.s3_latency", description=__doc__)
    parser.add_argument("--report", type=Path,
                        default=ROOT / "fixtures" / "pdfs" / "monthly_report.pdf")  # fmt: skip
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[30.0, 100.0])
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--trips", action="store_true", help="print each wave's first request")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    common.clear_foreign_s3_settings()
    delays = [ms / 1000 for ms in args.latency_ms]
    with local_server() as server, local_s3.moto_server() as endpoint:
        os.environ.update({**local_s3.CREDENTIALS, "AWS_ENDPOINT_URL": endpoint})
        print(
            f"PostgreSQL at {server.host}:{server.port}; moto S3 at {endpoint}; "
            f"delays {', '.join(f'{ms:.0f} ms' for ms in args.latency_ms)} a round trip"
        )
        try:
            with tempfile.TemporaryDirectory(prefix="report-bench-latency-") as scratch:
                result = bench(args.report, Path(scratch), server, endpoint, delays, args.repeat)
        except BenchError as error:
            print(f"\nBENCHMARK INVALID: {error}", file=sys.stderr)
            return 2
    print(f"\n{result['name']} (medians of {args.repeat} rounds; paired: per-round ratio)")
    print(f"  {'variant':<10}{'run':>9}{'wall':>9}{'ratio':>9}{'trips':>8}{'waves':>8}"
          f"{'others':>8}")  # fmt: skip
    for name, r in result["rows"].items():
        print(f"  {name:<10}{r['run_s']:>8.2f}s{r['wall_s']:>8.2f}s{r['paired_ratio']:>8.2f}x"
              f"{r['trips']:>8.0f}{r['waves']:>8.0f}{r['others']:>8.0f}")  # fmt: skip
    first = f"{args.latency_ms[0]:.0f} ms"
    ratio = result["rows"][first]["paired_ratio"]
    print(
        f"  goal {GOAL}x at 30 ms: {'met' if ratio <= GOAL else 'NOT met'} ({first}: {ratio:.2f}x)"
    )
    opened = Counter(result["opened"])
    print(
        "  waves by their first request: " + ", ".join(f"{k} {n}" for k, n in opened.most_common())
    )
    if args.trips:
        print("  waves in order: " + " | ".join(result["opened"]))
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)")
    record = {"machine": common.machine(load=load), "args": vars(args), "report": result}
    path = common.write_json(args.out, record, prefix="s3-latency-")
    print(f"\nwritten {path}  (total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

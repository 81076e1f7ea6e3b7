"""`python -m report_pipeline.host_janitor`: the workdir part of the janitor on one worker host.

Workdirs (decoded pages while a step runs) live on each worker host's local disk
(`REPORT_PIPELINE_WORK`). `cleanup_job` sweeps the store and the workdirs of the host its step
runs on; with steps on Celery workers, that is whichever worker took the step, so a dead step's
workdir on another host would wait for a janitor step to land there. Each Celery worker therefore
starts this beside itself (report_pipeline/celery_worker.py), and any other worker host can run
it from cron or a service manager:

    python -m report_pipeline.host_janitor [--every 300] [--once] [--now ISO]

It sweeps only this host's expired workdirs (never one under a live lease), records one audit
event per deletion in the deployment's store, and exits when the process that started it is
gone (a worker killed with SIGKILL leaves no janitor behind). The store and work root are the
deployment's, as the definitions wire them (`REPORT_PIPELINE_DEPLOYMENT` and its variables).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from report_pipeline.core.model.clock import parse_iso, utc_now
from report_pipeline.core.model.wording import plural
from report_pipeline.core.retention import janitor
from report_pipeline.core.storage.store import StorageError

DEFAULT_EVERY = 300.0  # seconds; the work clock is 15 minutes


def sweep_once(now=None) -> janitor.JanitorPass:
    from report_pipeline.defs.deployment import deployment as chosen

    name = chosen.deployment()
    resources = chosen.resources_for(name, chosen.IN_PROCESS)
    store = resources["store"].process_config_and_initialize().get_store()
    settings = resources["settings"].process_config_and_initialize().settings()
    return janitor.sweep_host(store, settings.work_root, now or utc_now())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m report_pipeline.host_janitor")
    parser.add_argument("--every", type=float, default=DEFAULT_EVERY, help="seconds between sweeps")
    parser.add_argument("--once", action="store_true", help="one sweep, then exit")
    parser.add_argument("--now", default="", help="sweep as of this ISO 8601 UTC time (what-if)")
    args = parser.parse_args(argv)
    parent = os.getppid()
    while True:
        try:
            stats = sweep_once(parse_iso(args.now) if args.now else None)
        except StorageError as error:  # the store is away: the next sweep tries again
            if args.once:
                raise SystemExit(f"host janitor: {error}") from None
            print(f"host janitor: storage error, next sweep in {args.every:g} s: {error}")
        else:
            if stats.deletions or args.once:
                print(f"host janitor: deleted {plural(len(stats.deletions), 'workdir')}, "
                      f"{plural(stats.bytes_deleted, 'byte')}", flush=True)  # fmt: skip
        if args.once:
            return 0
        deadline = time.monotonic() + args.every
        while time.monotonic() < deadline:
            if os.getppid() != parent:  # whoever started us is gone
                return 0
            time.sleep(min(1.0, args.every))


if __name__ == "__main__":
    sys.exit(main())

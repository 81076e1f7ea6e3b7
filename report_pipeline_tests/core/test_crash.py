"""A real worker process killed with SIGKILL mid-page: its `finally` never runs, so what it
left behind is the janitor's, once the lease has elapsed."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from report_pipeline.core.checks import retention_audit
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.retention import janitor
from report_pipeline.core.storage.local_store import PARTIAL
from report_pipeline_tests.conftest import fixture_pdf

WORKER = """
import pathlib, sys
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.steps import extract, stage
store, settings = LocalStore(sys.argv[1]), PipelineSettings(pathlib.Path(sys.argv[2]))
staged, tasks = stage(store, pathlib.Path(sys.argv[3]), "inbox", "2026-10", 0, settings, "r/s")
print("staged", flush=True)
for task in tasks:
    extract(store, task, settings, "r/extract")
print("finished", flush=True)
"""


def kill_mid_extraction(store, work_root: Path) -> tuple[list[Path], int]:
    pdf = fixture_pdf("monthly_report.pdf")
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(store.root), str(work_root), str(pdf)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert worker.stdout.readline().strip() == "staged"
        give_up = time.monotonic() + 60
        while time.monotonic() < give_up:
            uploaded = sum("/images/" in o.key for o in store.list("archive"))
            if list(work_root.rglob("w-*")) and uploaded >= 5:
                break
            time.sleep(0.005)
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL
    return list(work_root.rglob("w-*")), uploaded


@pytest.mark.slow
def test_worker_killed_mid_page_is_cleaned_up_by_the_next_pass_after_its_lease(store, settings):
    left, uploaded = kill_mid_extraction(store, settings.work_root)
    assert len(left) == 1 and (left[0] / "lease.json").exists() and uploaded >= 5
    policy, now = settings.retention, utc_now()
    assert janitor.run(store, settings.work_root, now, policy).deletions == []
    assert left[0].exists()  # live lease: a worker might still be using it
    after = now + timedelta(minutes=policy.lease_minutes + policy.work_minutes + 1)
    # the kill may land inside a write: that half-written file is swept as well, nothing else
    torn = len(list((store.root / PARTIAL).iterdir()))
    sweep = janitor.run(store, settings.work_root, after, policy)
    kinds = sorted(e.kind for e in sweep.deletions)
    assert kinds == ["partial_write"] * torn + ["workdir", "working_material"]
    assert list((store.root / PARTIAL).iterdir()) == []
    assert not left[0].exists() and list(settings.work_root.rglob("w-*")) == []
    assert list(store.list("work")) == [] and list(store.list("staged")) == []
    # the unfinished revision's plan and the images extraction had written to their archive keys
    # went too: without a published manifest they are working material, on the short clock
    assert list(store.list("archive")) == []
    outcomes = retention_audit.audit_all(store, settings.work_root, after, policy)
    assert all(o.passed for o in outcomes), [o for o in outcomes if not o.passed]

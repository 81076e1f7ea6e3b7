"""`make dev` as an operator uses it: Ctrl-C stops everything quickly, and a step's stdout and
stderr can be read through the webserver's GraphQL API, the way the UI reads them."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from report_pipeline_tests.intake.live import wait_for
from report_pipeline_tests.operate.devserver import make_dev, wait_until

pytestmark = pytest.mark.live

CAPTURES = """query($r: ID!) { logsForRun(runId: $r) { ... on EventConnection {
    events { __typename ... on LogsCapturedEvent { fileKey stepKeys } } } } }"""
METADATA = """query($k: [String!]!) { capturedLogsMetadata(logKey: $k) {
    stdoutLocation stderrLocation stdoutDownloadUrl stderrDownloadUrl } }"""
LOGS = """query($k: [String!]!) { capturedLogs(logKey: $k) { stdout stderr cursor } }"""


@pytest.mark.parametrize(
    ("sig", "to_group", "drain_s", "sigint"),
    [(signal.SIGINT, True, 10, signal.SIG_DFL), (signal.SIGTERM, False, 30, signal.SIG_DFL),
     (signal.SIGINT, True, 10, signal.SIG_IGN), (signal.SIGTERM, False, 30, signal.SIG_IGN)],
    ids=["ctrl-c: SIGINT to the process group", "SIGTERM to make",
         "SIGINT to the group, started with SIGINT ignored",
         "SIGTERM to make, started with SIGINT ignored"],
)  # fmt: skip
def test_make_dev_stops_with_a_run_in_flight_promptly(
    tmp_path: Path, sig, to_group, drain_s, sigint
):
    """GNU make passes SIGTERM on to its child; SIGINT it expects the terminal to have sent
    to the whole group (SIGINT to make's pid alone is never passed on: make waits). Ctrl-C
    reaches every process at once: all are gone within 10 s. SIGTERM to make alone goes down
    the chain (make, uv, dagster dev, its children): make returns within 10 s; the code server
    was once seen still running 10 s after that on a loaded machine, so the group gets 30 s.
    Started with SIGINT ignored (a script's `setsid make dev &`), dagster dev would ignore both
    signals (it gives SIGTERM SIGINT's handler): the Makefile restores their defaults.
    The seconds are what a quiet machine needs, scaled by the load on its cores (`busy()`): the
    test is about stopping, not about how fast a loaded machine stops."""
    with make_dev(tmp_path, "monthly_report.pdf", sigint) as dev:
        dev.launch()
        wait_for(lambda: "STARTED" in dev.statuses(), "a run to start", 180)
        scale = busy()
        (os.killpg if to_group else os.kill)(dev.process.pid, sig)
        waited = wait_until(lambda: dev.process.poll() is not None, 10 * scale)
        assert dev.process.poll() is not None, f"make dev still running after {waited:.1f} s"
        drained = wait_until(lambda: not dev.group(), drain_s * scale - waited)
        assert dev.group() == [], dev.group()
        print(f"\n{sig.name}: make exited in {waited:.1f} s, all gone in {waited + drained:.1f} s "
              f"(load scale {scale:.1f})")  # fmt: skip


def busy() -> float:
    """How much longer than on a quiet machine things may take now: the 1-minute load per core,
    at least 1 and at most 6 (a machine busier than that is not a fair test of anything)."""
    per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    return min(6.0, max(1.0, per_core))


def test_a_steps_stdout_and_stderr_are_readable_the_way_the_ui_reads_them(tmp_path: Path):
    with make_dev(tmp_path) as dev:
        run_id = dev.launch()
        wait_for(lambda: dev.status(run_id) in ("SUCCESS", "FAILURE"), "the run", 120)
        assert dev.status(run_id) == "SUCCESS"
        events = dev.graphql(CAPTURES, {"r": run_id})["logsForRun"]["events"]
        (capture,) = [e for e in events if e["__typename"] == "LogsCapturedEvent"]
        assert "report_manifest.stage_report" in capture["stepKeys"]
        key = [run_id, "compute_logs", capture["fileKey"]]
        where = dev.graphql(METADATA, {"k": key})["capturedLogsMetadata"]
        assert Path(where["stderrLocation"]).is_file()
        assert dev.home / "storage" in Path(where["stderrLocation"]).parents
        stderr = dev.graphql(LOGS, {"k": key})["capturedLogs"]["stderr"]
        assert stderr is not None  # null is what the UI shows as "No log file available"
        assert 'STEP_START - Started execution of step "report_manifest.stage_report"' in stderr
        assert 'Finished execution of step "report_manifest.stage_report"' in stderr
        # The sensor (on by default) sees the same report: if its run holds the revision's claim,
        # this run extracts nothing and says so; otherwise (its own claim, or the sensor's run
        # already done and reused) it publishes the manifest.
        assert ('Finished execution of step "report_manifest.publish_manifest"' in stderr
                or "nothing extracted in this run" in stderr), stderr[-3000:]  # fmt: skip

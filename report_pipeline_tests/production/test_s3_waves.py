"""A month's run on the production configuration through the latency proxy the S3 benchmark
uses (devstack/latency_proxy.py, bench/s3_latency.py), at 150 ms a round trip: what a step
writes last goes beside its output's upload, so the run waits for the two at once (docs/
performance.md, "Through a real bucket's latency"). Each pair must overlap in time; 150 ms is
far longer than Dagster's own events between them."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from devstack import latency_proxy
from report_pipeline.definitions import build_defs

pytestmark = pytest.mark.live

QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
MONTH = "2026-05"  # a month no other test in this folder uses
DELAY = 0.15

# (what a step writes, its output or the write beside it), each a request's method and a part
# of its path
BESIDE = {
    "stage_report's two outputs": ("PUT stage_report/staged", "PUT stage_report/tasks/"),
    "extraction's outcomes, its output": ("PUT /outcomes.json", "PUT .extract_pages--"),
    "the child records, the archive step's output": ("PUT /children/", "PUT .archive_pages--"),
    "manifest_table's check, its table": ("HEAD /current/", "PUT /manifest_table.csv"),
}


def test_each_steps_last_writes_go_beside_its_outputs(production_instance, backend, monkeypatch):
    # pandas as a process has it after its first table: in a fresh one, the table's first build
    # imports it (~0.3 s) while the check runs beside it, so the two trips need not overlap
    import pandas  # noqa: F401, PLC0415

    backend.drop("repeated_image.pdf", MONTH)
    port = urlsplit(backend.endpoint).port
    with latency_proxy.latency_proxy(port, DELAY) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)  # the run's clients, not the logs'
        job = build_defs("production").resolve_job_def("extract_report_job")
        result = job.execute_in_process(
            partition_key=MONTH, instance=production_instance, run_config=QUIET
        )
        trips = proxy.take_trips()
    assert result.success

    def the(request: str) -> latency_proxy.Trip:
        method, part = request.split(" ")
        (trip,) = [
            t for t in trips if t.first_line.startswith(f"{method} ") and part in t.first_line
        ]
        return trip

    for what, (first, second) in BESIDE.items():
        a, b = the(first), the(second)
        assert max(a.started, b.started) < min(a.ended, b.ended), what  # in flight together

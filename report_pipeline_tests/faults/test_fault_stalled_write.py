"""A store write that stalls mid-extraction (an S3 endpoint slow to answer, a disk waiting on its
controller) for longer than an image's decode budget. A real run (the core pipeline in a process
of its own) is held by the fault layer at its first archived image's write
(`pause=archive/*/images/*`, devstack/faults.py) for 12 s, past the 10 s floor of every image's
budget, and let go. The decoders wait on the held run meanwhile; the manifest it then publishes
must be the one an unstalled run publishes: no good image turned `decode_timeout`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from report_pipeline.core.model import store_json
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import Store
from report_pipeline_tests import held_run
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.live

REPORT = "monthly_report.pdf"  # 421 images: the decoders are busy when the first write stalls
STALL_S = 12.0  # DecodeSettings.image_floor_seconds is 10


def test_a_write_stalled_past_the_decode_budget_costs_time_not_images(
    any_store: Store, tmp_path: Path, clock
):
    month = clock.month(-2)
    settings = PipelineSettings(tmp_path / "work")
    signal_file = tmp_path / "held.json"
    faults = f"pause=archive/*/images/*,signal={signal_file}"
    run = held_run.start(any_store, settings.work_root, fixture_pdf(REPORT), month, faults)
    held = held_run.held_at(run, signal_file)
    assert "/images/" in held["key"]
    time.sleep(STALL_S)
    state, key = held_run.finish(run, signal_file).split()[1:]
    assert state == "complete"
    stalled = store_json.read_manifest(any_store, key)
    calm = run_report(LocalStore(tmp_path / "calm"), fixture_pdf(REPORT),
                      PipelineSettings(tmp_path / "calm-work"), "inbox", month)  # fmt: skip
    assert [c.quarantine_reason for c in stalled.children if c.quarantine_reason] == [
        c.quarantine_reason for c in calm.children if c.quarantine_reason
    ]  # fmt: skip
    assert stalled.counts == calm.counts
    held_run.assert_archive_matches(any_store, stalled)

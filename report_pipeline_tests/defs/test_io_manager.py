"""The embedded default's IO manager (defs/deployment/io_manager.py): Dagster's own layout, so a
re-execution reads what an earlier run wrote, and no event-log line per output or input (each is
an event write in every run worker)."""

from __future__ import annotations

import pickle
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.defs.deployment.io_manager import LocalIOManager
from report_pipeline.defs.deployment.resources import PipelineSettingsResource, StoreResource
from report_pipeline_tests.defs.conftest import events

pytestmark = pytest.mark.slow


def layout(base: Path, run_id: str) -> list[str]:
    return sorted(str(p.relative_to(base)).replace(run_id, "<run>")
                  for p in base.rglob("*") if p.is_file())  # fmt: skip


def test_outputs_where_dagsters_filesystem_io_manager_puts_them_with_no_log_line_each(
    inbox, materialize, instance, tmp_path
):
    inbox("truncated_jpeg.pdf")
    ours = materialize(io_manager=LocalIOManager(base_dir=str(tmp_path / "ours")))
    dagsters = materialize(  # a store and scratch of its own: the same work again
        store=StoreResource(root=str(tmp_path / "store2")),
        settings=PipelineSettingsResource(work_root=str(tmp_path / "work2")),
        io_manager=dg.FilesystemIOManager(base_dir=str(tmp_path / "dagster")),
    )
    assert ours.success and dagsters.success
    written = layout(tmp_path / "ours", ours.run_id)
    assert written == layout(tmp_path / "dagster", dagsters.run_id)
    assert "report_manifest/2026-10" in written and len(written) == 5  # 4 op outputs + the asset
    # the same objects: Dagster's manager could read ours back and the other way round
    asset = (tmp_path / "ours" / "report_manifest" / "2026-10").read_bytes()
    assert pickle.loads(asset) == dagsters.output_for_node("report_manifest")
    handled = events(ours, "HANDLED_OUTPUT")
    assert len(handled) == 5 and len(events(ours, "LOADED_INPUT")) == 5
    paths = {e.event_specific_data.metadata["path"].value for e in handled}
    assert "report_manifest/2026-10" in paths and not any(p.startswith("/") for p in paths)
    # Dagster's UPathIOManager wrote a DEBUG line for each of the 10 (events at DEBUG)
    lines = [r.user_message for r in instance.all_logs(ours.run_id) if not r.is_dagster_event]
    assert lines == []

"""`pages_per_task` from the Launchpad: run config on stage_report overrides the resource."""

import dagster as dg
import pytest

from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline_tests.defs.conftest import events, materialization

pytestmark = pytest.mark.slow


def test_run_config_pages_per_task_1_gives_one_step_per_page(
    inbox, instance, resources, small_report
):
    inbox(small_report)  # 3 pages; the resource groups them into one page group
    result = dg.materialize(
        [report_manifest], partition_key="2026-10", instance=instance, resources=resources,
        run_config=stage_report_run_config({"pages_per_task": 1}),
    )  # fmt: skip
    assert result.success
    keys = sorted(e.step_key for e in events(result, "STEP_SUCCESS", "archive_pages"))
    assert keys == [f"report_manifest.archive_pages[page_{n:04d}]" for n in range(1, 4)]
    outputs = events(result, "STEP_OUTPUT", "extract_pages")
    pages = sorted(
        tuple(e.event_specific_data.metadata[k].value for k in ("pages", "first_page", "last_page"))
        for e in outputs
    )
    assert pages == [(1, n, n) for n in range(1, 4)]
    (staged,) = [
        e for e in events(result, "STEP_OUTPUT", "stage_report")
        if e.event_specific_data.step_output_handle.output_name == "staged"
    ]  # fmt: skip
    assert staged.event_specific_data.metadata["page_groups"].value == 3
    assert materialization(result)["archived"] == 9


def test_without_run_config_the_resource_groups_the_pages(inbox, materialize, small_report):
    inbox(small_report)
    result = materialize()
    assert result.success
    keys = [e.step_key for e in events(result, "STEP_SUCCESS", "extract_pages")]
    assert keys == ["report_manifest.extract_pages[pages_0001_0003]"]

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports.assets import report_manifest


@pytest.fixture
def resources(tmp_path: Path) -> dict:
    return {
        "inbox": InboxResource(root=str(tmp_path / "inbox")),
        "store": StoreResource(root=str(tmp_path / "store")),
        "settings": PipelineSettingsResource(work_root=str(tmp_path / "work")),
        "checks": CheckSettingsResource(),
    }


@pytest.fixture
def materialize(instance, resources) -> Callable[..., dg.ExecuteInProcessResult]:
    def run(month: str = "2026-10", **overrides) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            [report_manifest], partition_key=month, instance=instance,
            resources={**resources, **overrides}, raise_on_error=False,
        )  # fmt: skip

    return run


def events(result: dg.ExecuteInProcessResult, kind: str, step: str = "") -> list[dg.DagsterEvent]:
    return [
        e for e in result.all_events if e.event_type_value == kind and step in (e.step_key or "")
    ]


def materialization(result: dg.ExecuteInProcessResult, asset: str = "report_manifest") -> dict:
    found = result.get_asset_materialization_events()
    (event,) = [e for e in found if e.asset_key.to_user_string() == asset]
    return {k: v.value for k, v in event.materialization.metadata.items()}

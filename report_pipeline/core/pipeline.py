"""The whole report in one process, without Dagster: the same step functions, run in a loop.

This is the bounded synchronous path behind `report-pipeline preview` (core/preview.py) and the
benchmark's plain loop (which passes `decode.child.decode_in_process` as its decoders).
"""

from __future__ import annotations

from pathlib import Path

from report_pipeline.core.archive.publishing import publish, record_children
from report_pipeline.core.decode.pool import decode_pages
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.steps import Decoders, extract, stage
from report_pipeline.core.storage.store import Store


def run_report(
    store: Store, source: Path, settings: PipelineSettings, source_name: str, month: str,
    pages_per_task: int = 0, decoders: Decoders = decode_pages,
) -> Manifest:  # fmt: skip
    staged, tasks = stage(store, source, source_name, month, 0, settings, "plain", pages_per_task)
    archived = []
    for task in tasks:
        archived.append(
            record_children(store, extract(store, task, settings, "plain", 1, decoders), 1)[0]
        )
    manifest, _ = publish(store, staged, archived, settings.retention)
    return manifest

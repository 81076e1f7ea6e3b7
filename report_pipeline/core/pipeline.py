"""The whole report in one process, without Dagster: the same step functions, run in a loop.

This is the bounded synchronous path behind `report-pipeline preview` and the benchmark's
plain loop.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from report_pipeline.core.archive import archive, publish
from report_pipeline.core.retention import utc_now
from report_pipeline.core.storage import LocalStore, Store
from report_pipeline.core.workdir import private_root
from report_pipeline.core.worker import WorkerSettings, extract, stage


def run_report(
    store: Store, source: Path, settings: WorkerSettings, source_name: str, month: str,
    pages_per_task: int = 0,
) -> dict[str, Any]:  # fmt: skip
    staged, tasks = stage(store, source, source_name, month, 0, settings, "plain", pages_per_task)
    archived = []
    for task in tasks:
        archived.append(archive(store, extract(store, task, settings, "plain"), 1)[0])
    manifest, _ = publish(store, staged, archived, settings.retention)
    return manifest


def preview(source: Path, out_dir: Path, settings: WorkerSettings) -> dict[str, Any]:
    """Process one PDF into `out_dir` (0700): <content hash>.png per distinct image + manifest."""
    month = utc_now().strftime("%Y-%m")
    private_root(settings.work_root)
    with tempfile.TemporaryDirectory(dir=settings.work_root, prefix="preview-") as scratch:
        store = LocalStore(Path(scratch) / "store")
        scratch_settings = replace(settings, work_root=Path(scratch) / "work")
        manifest = run_report(store, source, scratch_settings, "preview", month)
        private_root(out_dir)
        for child in manifest["children"]:
            if child["object_key"] and child["state"] == "archived":
                target = out_dir / f"{child['content_hash']}.png"
                if not target.exists():
                    shutil.copyfile(store.root / child["object_key"], target)
                    os.chmod(target, 0o600)
    return manifest

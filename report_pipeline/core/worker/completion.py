"""Completing a plan: the planned tasks a re-execution left out are extracted and archived in
the manifest step, so the manifest accounts for the plan, not for whatever reached the step."""

from __future__ import annotations

from report_pipeline.core.archive.archive import archive
from report_pipeline.core.model.messages import ArchivedTask, StagedReport
from report_pipeline.core.model.settings import WorkerSettings
from report_pipeline.core.model.store_json import complete_manifest
from report_pipeline.core.storage.store import Store
from report_pipeline.core.worker.plan_store import missing_tasks
from report_pipeline.core.worker.worker import extract


def complete_plan(
    store: Store, staged: StagedReport, archived: list[ArchivedTask], settings: WorkerSettings,
    owner: str,
) -> list[ArchivedTask]:  # fmt: skip
    """Extract and archive here every planned task that has no result in `archived`.

    The manifest must account for the plan, not for whatever reached this step. A re-execution
    from failure of a run whose worker died mid fan-out leaves out the mapped tasks that never
    started (Dagster selects only steps with a failed or unfinished attempt), and the collected
    list is then silently short. Both steps are idempotent, so doing them again is safe.
    """
    if staged.reused or complete_manifest(store, staged.ref) is not None:
        return []
    done = {task.task.task_key for task in archived}
    return [
        archive(store, extract(store, task, settings, owner), 1)[0]
        for task in missing_tasks(store, staged.ref, done)
    ]

"""Dagster's side of the revision claims (core/intake/claims.py): runs found by tag on the
instance."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import dagster as dg

from report_pipeline.core.intake import claims
from report_pipeline.core.intake.submission import REVISION_TAG

# Runs that have not finished: a UI launch or backfill among them may not know its revision yet.
UNFINISHED = [
    dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]  # fmt: skip


def runs_of(instance: dg.DagsterInstance) -> Callable[[str], list[tuple[str, str]]]:
    """claim token → (run id, status) of the runs carrying it, newest first."""

    def lookup(token: str) -> list[tuple[str, str]]:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={claims.CLAIM_TAG: token}))
        return [(run.run_id, run.status.value) for run in runs]

    return lookup


def unfinished_runs(
    instance: dg.DagsterInstance, month: str, limit: int | None = None
) -> Sequence[dg.DagsterRun]:
    """The month's runs that are queued, starting or running, newest first: the one query for
    them (claims here, the overdue sensor)."""
    return instance.get_runs(
        filters=dg.RunsFilter(tags={"dagster/partition": month}, statuses=UNFINISHED), limit=limit
    )


def unresolved_run(instance: dg.DagsterInstance, month: str) -> str | None:
    """An unfinished run of the month that has not read its report yet (a UI launch or backfill
    of the primary inbox, before `stage_report` tags it with its revision)."""
    runs = unfinished_runs(instance, month)
    return next((run.run_id for run in runs if REVISION_TAG not in run.tags), None)

"""What a run does with its month, decided in one place: `stage_for_run` returns one of four
outcomes, and the `stage_report` op only translates it into Dagster's outputs and events.

- `NothingToStage`: the month has no report (`no_report`), or intake's run was for content a
  later arrival superseded (`superseded`): the run succeeds and extracts nothing.
- `Reused`: the revision is archived with a complete manifest: nothing to extract.
- `ClaimLost`: another run holds the revision's claim (core/intake/claims.py): nothing extracted.
- `Staged`: the report is in the store, planned, and this run holds the claim: fan out.
A refusal of the report itself (bad bytes, a page the walk cannot finish) raises `RefusedInput`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from report_pipeline.core import steps
from report_pipeline.core.intake import claims
from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.month_report import (
    NO_REPORT,
    NotLatest,
    choose_for_run,
    opened_for_run,
    reader,
)
from report_pipeline.core.intake.sources import ReportSource
from report_pipeline.core.model.messages import PageTask, StagedReport
from report_pipeline.core.model.settings import PipelineSettings, TaskSizing
from report_pipeline.core.storage.store import Store


@dataclass(frozen=True)
class RunAsks:
    """What the run names: intake fills source, key and hash; a UI launch or backfill none."""

    month: str
    source: str = ""  # the source's name ("": the primary inbox)
    key: str = ""
    source_hash: str = ""
    pages_per_task: int = TaskSizing.pages_per_task
    target_units: float = TaskSizing.target_units


@dataclass(frozen=True)
class RunIdentity:
    """The run, as the claims see it: its id, the claim token intake tagged it with ("" for a
    UI launch or backfill), how to find the runs that carry a token, and, for a re-execution,
    the runs it re-executes (its parent and root): a claim one of them took is its own."""

    run_id: str
    claim_token: str
    runs_of: claims.RunsOf
    ancestors: tuple[str, ...] = ()


@dataclass(frozen=True)
class NothingToStage:
    why: str  # NO_REPORT or "superseded"
    message: str


@dataclass(frozen=True)
class Reused:
    staged: StagedReport


@dataclass(frozen=True)
class ClaimLost:
    staged: StagedReport
    claim: claims.Outcome


@dataclass(frozen=True)
class Staged:
    staged: StagedReport
    tasks: list[PageTask]
    claim: claims.Outcome


Decision = NothingToStage | Reused | ClaimLost | Staged


def stage_for_run(
    store: Store, sources: Sequence[ReportSource], settings: PipelineSettings, asks: RunAsks,
    run: RunIdentity, owner: str, on_revision: Callable[[StagedReport], None] = lambda _: None,
) -> Decision:  # fmt: skip
    """Choose the month's report (the content that arrived last, or the file intake named),
    stage it, and claim its revision for this run. `on_revision` is told the revision once it is
    known and before the claim (the op tags the run with it, so intake finds this run). The
    claim is written beside the plan; a month's first look stages the download it hashed."""
    with reader(sources, settings, owner, keep=True) as read:
        try:
            chosen = choose_for_run(store, sources, asks.month, settings, owner, asks.source,
                                    asks.key, asks.source_hash, read)  # fmt: skip
        except RefusedInput as refused:
            if refused.code == NO_REPORT:  # an ordinary month with nothing in it
                return NothingToStage(NO_REPORT, refused.message)
            raise
        if isinstance(chosen, NotLatest):
            return NothingToStage("superseded", chosen.message)
        if chosen.archived is not None:
            on_revision(chosen.archived)
            return Reused(chosen.archived)
        claimed: list[claims.Outcome] = []

        def claim(staged: StagedReport) -> None:  # beside the plan's write: one wait on S3
            claimed.append(claims.claim_in_run(store, staged.ref.revision, run.run_id,
                                               run.claim_token, run.runs_of,
                                               ancestors=run.ancestors))  # fmt: skip

        with opened_for_run(sources, chosen, settings, owner, read) as path:
            staged, tasks = steps.stage(
                store, path, chosen.source, asks.month, len(chosen.file.superseded), settings,
                owner, asks.pages_per_task, asks.target_units, expected_hash=chosen.sha256,
                source_file=chosen.file, known=on_revision, claim=claim, read_ahead=chosen.held,
            )  # fmt: skip
    if staged.reused:
        on_revision(staged)
        return Reused(staged)
    (outcome,) = claimed
    return Staged(staged, tasks, outcome) if outcome.won else ClaimLost(staged, outcome)

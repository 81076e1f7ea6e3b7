"""What a run does with its month (core/stage_decision.py), the one decision `stage_report`
translates: nothing to stage, staged with the claim, the claim held by another run, reused."""

from __future__ import annotations

import shutil

import pytest

from report_pipeline.core.archive.publishing import publish, record_children
from report_pipeline.core.intake.sources import LocalInboxSource
from report_pipeline.core.stage_decision import (
    ClaimLost,
    NothingToStage,
    Reused,
    RunAsks,
    RunIdentity,
    Staged,
    stage_for_run,
)
from report_pipeline.core.steps import extract

pytestmark = pytest.mark.slow


@pytest.fixture
def month(clock) -> str:
    return clock.month(-2)


def decide(tmp_path, store, settings, month, run_id: str, holders=None, told=None):
    inbox = [LocalInboxSource("inbox", tmp_path / "inbox")]
    run = RunIdentity(run_id, "", lambda token: holders or [])
    return stage_for_run(store, inbox, settings, RunAsks(month), run, run_id,
                         on_revision=[].append if told is None else told.append)  # fmt: skip


def test_a_month_without_a_report_has_nothing_to_stage(tmp_path, store, settings, month):
    (tmp_path / "inbox" / month).mkdir(parents=True)
    decision = decide(tmp_path, store, settings, month, "run-1")
    assert isinstance(decision, NothingToStage) and decision.why == "no_report"


def test_staged_then_claimed_elsewhere_then_reused(tmp_path, store, settings, month, small_report):
    folder = tmp_path / "inbox" / month
    folder.mkdir(parents=True)
    shutil.copyfile(small_report, folder / "report.pdf")
    told: list = []
    first = decide(tmp_path, store, settings, month, "run-1", told=told)
    assert isinstance(first, Staged) and first.claim.won and first.tasks
    assert [s.ref.revision for s in told] == [first.staged.ref.revision]  # before the claim

    holder = [("run-1", "STARTED")]
    second = decide(tmp_path, store, settings, month, "run-2", holders=holder)
    assert isinstance(second, ClaimLost) and second.claim.run_id == "run-1"

    archived = [record_children(store, extract(store, t, settings, "t"), 1)[0] for t in first.tasks]
    publish(store, first.staged, archived, settings.retention)
    third = decide(tmp_path, store, settings, month, "run-3")
    assert isinstance(third, Reused) and third.staged.ref == first.staged.ref

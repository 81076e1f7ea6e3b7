"""Per-month check logic, without Dagster: on time means archived by the due time, the
first-attempt share counts retries only, the quarantine rate is its own signal, and a damaged
page is accounted for but named until a reviewer accepts it."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from report_pipeline.core.archive.manifest import build_manifest, sequenced
from report_pipeline.core.checks import month_checks
from report_pipeline.core.checks.month_checks import Thresholds
from report_pipeline.core.checks.pages import pages_drawn_whole
from report_pipeline.core.model.records import Break, PageStreams, Review
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.core.test_manifest import DEADLINES, REF, build, record

LIMITS = Thresholds()
DUE = datetime(2026, 11, 6, tzinfo=UTC)  # October's report: due by the end of November 5


def test_a_month_is_due_at_the_end_of_its_due_day_of_the_next_month():
    assert month_checks.due_at("2026-10", 5) == DUE
    assert month_checks.due_at("2025-12", 5) == datetime(2026, 1, 6, tzinfo=UTC)  # a new year


@pytest.mark.parametrize(
    ("archived_at", "now", "passed", "text", "hours"),
    [
        (DUE - timedelta(hours=2), DUE + timedelta(days=40), True,
         "report archived by its due time", 2.0),
        (DUE + timedelta(hours=1358), DUE + timedelta(days=90), False,
         "report archived late", -1358.0),
        (None, DUE + timedelta(hours=5), False, "no report archived for 2026-10: overdue", -5.0),
        (None, DUE - timedelta(hours=5), True, "no archived report yet; not due", 5.0),
    ],
    ids=["on_time", "late", "overdue_not_archived", "not_due_yet"],
)  # fmt: skip
def test_archived_on_time_passes_only_by_the_due_time(archived_at, now, passed, text, hours):
    outcome = month_checks.archived_on_time("2026-10", archived_at, now, LIMITS)
    assert (outcome.passed, outcome.description) == (passed, text)
    assert outcome.metadata["hours_before_due"] == hours
    assert outcome.metadata["archived"] is (archived_at is not None)


def test_a_quarantined_image_settled_on_its_first_attempt_is_not_a_retry():
    records = [record(1, i) for i in range(5)] + [record(1, 5, "quarantined", None)]
    manifest = build({1: 6}, records)
    first = month_checks.first_attempt_validation(manifest, LIMITS)
    assert first.passed and first.metadata["validated_first_attempt_pct"] == 100.0
    rate = month_checks.quarantine_rate(manifest, LIMITS)
    assert not rate.passed and rate.metadata["quarantined_pct"] == 16.67
    assert rate.description == "16.67% of image occurrences quarantined (threshold 1.0%)"


def test_a_retried_image_lowers_the_first_attempt_share_either_way():
    records = [record(1, 0, attempts=2), record(1, 1, "quarantined", None, attempts=3)]
    records += [record(1, i) for i in range(2, 200)]
    manifest = build({1: 200}, records)
    assert manifest.metrics.validated_first_attempt_pct == 99.0
    assert month_checks.first_attempt_validation(manifest, LIMITS).passed  # 99 >= 99
    assert month_checks.quarantine_rate(manifest, LIMITS).metadata["quarantined_pct"] == 0.5
    assert month_checks.quarantine_rate(build({}, []), LIMITS).passed  # no images: 0%


def damaged_month(review=None):
    """Page 2 of three is damaged (its content ends inside an inline image); `review`: the
    decision on it."""
    cut = Break("stream_cut_off", "page content (object 9)", "it ends inside an inline image", 1)
    children = sequenced([record(1, 0), record(2, 0), record(3, 0)])
    streams = {2: PageStreams(1, (cut,), "e" * 64), 3: PageStreams(repaired=1)}
    manifest = build_manifest(
        REF, {1: 1, 2: 1, 3: 1}, children, DEADLINES, "2026-11-02T00:00:00.000Z", streams=streams
    )
    rows = tuple(replace(p, review=review) if p.page == 2 else p for p in manifest.pages)
    return replace(manifest, pages=rows)


def test_a_damaged_page_is_accounted_for_and_warned_about_until_accepted(tmp_path):
    manifest = damaged_month()
    complete = month_checks.manifest_complete(manifest)
    assert complete.passed and complete.metadata["damaged_pages"] == 1
    whole = pages_drawn_whole(manifest)
    assert not whole.passed and whole.metadata["damaged_pages"] == "2"
    assert whole.description == ("1 damaged page(s) not accepted: page 2 (page content (object "
                                 "9): it ends inside an inline image; undecided)")  # fmt: skip
    assert (whole.metadata["undecided"], whole.metadata["repaired_streams"]) == (1, 1)
    names = [
        o.name for o in month_checks.month_outcomes(LocalStore(tmp_path), manifest, LIMITS, DUE)
    ]
    assert names[-1] == "pages_drawn_whole" and set(month_checks.REVISION_CHECKS) <= set(names)


@pytest.mark.parametrize(
    ("decision", "passed", "text"),
    [("accepted", True, "every page drawn whole or accepted as it is (1 damaged, accepted)"),
     ("rejected", False, "1 damaged page(s) not accepted: page 2 rejected by ana: the chart is "
                         "cut in half")],
)  # fmt: skip
def test_accepting_a_damaged_page_clears_the_warning_and_rejecting_keeps_it(decision, passed, text):
    review = Review(decision, "ana", "2026-11-01T00:00:00.000Z", "the chart is cut in half")
    outcome = pages_drawn_whole(damaged_month(review))
    assert (outcome.passed, outcome.description) == (passed, text)


def test_a_month_of_whole_pages_passes():
    outcome = pages_drawn_whole(build({1: 1}, [record(1, 0)]))
    assert outcome.passed and outcome.description == "every page drawn whole"


def test_the_manifest_in_hand_counts_for_the_first_archive_without_a_read(tmp_path):
    """publish_manifest's checks: the month's first archive is the manifest just published when
    the store holds no other revision of the month (none read again)."""
    manifest = damaged_month()
    store = LocalStore(tmp_path)
    assert month_checks.first_archived_at(store, manifest.month) is None  # not stored
    found = month_checks.first_archived_at(store, manifest.month, manifest)
    assert found == datetime(2026, 11, 2, tzinfo=UTC)

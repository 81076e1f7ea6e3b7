from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.model import records
from report_pipeline.core.model.clock import Deadlines
from report_pipeline.core.model.messages import RevisionRef
from report_pipeline.core.model.records import ChildRecord

REF = RevisionRef("inbox-2026-10", "2026-10", "f" * 64, "1", "rev")
DEADLINES = Deadlines("2026-10-01T00:15:00.000Z", "2027-11-05T00:00:00.000Z")


def record(page, index, state="archived", content="h1", attempts=1, queued_s=0, started_s=1):
    return ChildRecord(
        sequence=0, page=page, index=index, state=state, attempts=attempts,
        validated_first_attempt=attempts == 1,
        queued_at=f"2026-10-01T00:00:{queued_s:02d}.000Z",
        started_at=f"2026-10-01T00:00:{started_s:02d}.000Z",
        finished_at="2026-10-01T00:01:00.000Z", content_hash=content, width=1,
        height=1, format="png", mode="RGB", bytes=10, stream_bytes=5,
        declared_type="jpeg", signature="image/jpeg",
        quarantine_reason=None if state == "archived" else "truncated",
        quarantine_detail=None, object_key=None, cleanup_lease="x", origin="xobject", xref=7,
    )  # fmt: skip


def build(expected, records):
    return mf.build_manifest(REF, expected, mf.sequenced(records), DEADLINES, "now")


def test_parent_is_complete_only_when_every_expected_child_is_accounted_for():
    records = [record(2, 0), record(1, 1, "quarantined", None), record(1, 0)]
    done = build({1: 2, 2: 1, 3: 0}, records)
    assert done.state == "complete"
    assert [c.sequence for c in done.children] == [1, 2, 3]
    assert [(c.page, c.index) for c in done.children] == [(1, 0), (1, 1), (2, 0)]
    assert [p.state for p in done.pages] == ["complete"] * 3
    missing = build({1: 2, 2: 2, 3: 0}, records)
    assert missing.state == "incomplete" and missing.pages[1].state == "incomplete"


def test_identical_images_are_counted_once_but_every_occurrence_is_listed():
    counts = build({1: 3}, [record(1, 0), record(1, 1), record(1, 2, content="h2")]).counts
    assert counts.archived == 3 and counts.distinct_images == 2
    assert counts.duplicate_occurrences == 1 and counts.archived_bytes == 20


def test_metrics_first_attempt_share_and_p95_queue_age():
    records = [record(1, i, started_s=i) for i in range(19)] + [record(2, 0, attempts=2)]
    metrics = build({1: 19, 2: 1}, records).metrics
    assert metrics.validated_first_attempt_pct == 95.0
    assert metrics.queue_age_p95_seconds == 17.0


def test_percentile_nearest_rank():
    assert records.percentile([], 95) == 0.0
    assert records.percentile([3.0], 95) == 3.0
    assert records.percentile([float(i) for i in range(1, 101)], 95) == 95.0

from dataclasses import replace

from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.model import records, store_json
from report_pipeline.core.model.clock import Deadlines
from report_pipeline.core.model.messages import RevisionRef
from report_pipeline.core.model.records import Break, ChildRecord, PageStreams, Review

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


CUT = Break("stream_cut_off", "page content (object 9)", "its data ends early, inside an inline "
            "image", 1)  # fmt: skip
DAMAGED = {2: PageStreams(1, (CUT,), "e" * 64), 3: PageStreams(repaired=1)}


def test_a_damaged_page_is_accounted_for_by_its_row_and_the_manifest_is_complete():
    """A page whose content stream broke off keeps its images' records; the page itself is a
    page-level quarantine (state damaged), so the manifest accounts for every page."""
    children = mf.sequenced([record(1, 0), record(2, 0), record(3, 0)])
    manifest = mf.build_manifest(REF, {1: 1, 2: 1, 3: 1}, children, DEADLINES, "now",
                                 streams=DAMAGED)  # fmt: skip
    assert manifest.state == "complete"
    assert [(p.state, p.broken_streams, p.repaired_streams) for p in manifest.pages] == [
        ("complete", 0, 0), ("damaged", 1, 0), ("complete", 0, 1)]  # fmt: skip
    assert manifest.pages[1].breaks == (CUT,) and manifest.pages[1].reason == "stream_cut_off"
    assert [p.page for p in mf.damaged_pages(manifest)] == [2]
    short = mf.build_manifest(REF, {1: 1, 2: 2}, children[:2], DEADLINES, "now", streams=DAMAGED)
    assert short.state == "incomplete" and short.pages[1].state == "incomplete"


def test_a_recount_keeps_what_broke_off_and_the_decision_on_the_page():
    children = mf.sequenced([record(1, 0), record(2, 0)])
    manifest = mf.build_manifest(REF, {1: 1, 2: 1}, children, DEADLINES, "now", streams=DAMAGED)
    decided = Review("accepted", "ana", "2026-10-02T00:00:00.000Z", "as printed")
    rows = tuple(replace(p, review=decided) if p.page == 2 else p for p in manifest.pages)
    quarantined = [replace(children[0], state="quarantined", quarantine_reason="truncated")]
    again = mf.recounted(replace(manifest, pages=rows), [*quarantined, children[1]])
    assert again.pages[0].quarantined == 1 and again.pages[1] == rows[1]


def test_a_page_row_leaves_out_what_is_empty_and_reads_back():
    children = mf.sequenced([record(1, 0), record(2, 0), record(3, 0)])
    manifest = mf.build_manifest(REF, {1: 1, 2: 1, 3: 1}, children, DEADLINES, "now",
                                 streams=DAMAGED)  # fmt: skip
    rows = store_json.manifest_to_json(manifest)["pages"]
    assert rows[0] == {"page": 1, "expected": 1, "archived": 1, "quarantined": 0,
                       "state": "complete"}  # as schemas 1 to 4 wrote a whole page  # fmt: skip
    assert rows[1]["breaks"][0]["what"] == CUT.what and rows[1]["evidence"] == "e" * 64
    assert rows[2]["repaired_streams"] == 1 and "breaks" not in rows[2]
    assert store_json.loads(store_json.dumps(manifest)) == manifest

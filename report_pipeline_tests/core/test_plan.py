"""The plan record: one writer and one reader (core/plan/record.py) for staging, the manifest step
and the retention audit."""

import json

from report_pipeline.core.model.messages import PageTask, RevisionRef
from report_pipeline.core.model.records import Break, PageStreams
from report_pipeline.core.plan.record import Plan, queued_at, read_plan, write_plan
from report_pipeline.core.storage.local_store import LocalStore

REF = RevisionRef("inbox-2026-10", "2026-10", "f" * 64, "3", "0123456789abcdef0123")
TASK = PageTask(REF, "pages_0001_0002", 1, 2, 3, "2026-10-01T00:00:00.000Z", 12.5, ((2, 2, 1),))


def test_a_plan_reads_back_as_it_was_written(tmp_path):
    store = LocalStore(tmp_path)
    cut = Break("stream_cut_off", "form (object 9)", "it ends inside an inline image", 1)
    streams = {2: PageStreams(1, (cut,), "e" * 64, 0), 1: PageStreams(repaired=2)}
    plan = Plan({1: 2, 2: 1}, streams, TASK.queued_at, (TASK,))
    write_plan(store, REF, plan)
    assert read_plan(store, REF) == plan
    assert queued_at(store.get_bytes(REF.plan_key, 1 << 20)) == TASK.queued_at


def test_a_plan_from_before_tasks_and_broken_pages_were_kept_still_reads(tmp_path):
    store = LocalStore(tmp_path)
    store.put_bytes(REF.plan_key, json.dumps({"expected": {"1": 2}, "queued_at": "t"}).encode())
    assert read_plan(store, REF) == Plan({1: 2}, {}, "t", ())


def test_a_plan_that_counted_broken_streams_only_reads_as_damaged_pages_without_details(tmp_path):
    store = LocalStore(tmp_path)
    old = {"expected": {"1": 2, "2": 0}, "queued_at": "t", "broken": {"2": 3}, "tasks": []}
    store.put_bytes(REF.plan_key, json.dumps(old).encode())
    assert read_plan(store, REF).streams == {2: PageStreams(3)}


def test_a_plan_from_before_whole_inline_images_were_told_apart_reads_them_as_cut_off(tmp_path):
    """Its unread inline images were all `truncated`: (page, n) reads as (page, n, 0 whole)."""
    store = LocalStore(tmp_path)
    task = {"task_key": "page_0002", "first_page": 2, "last_page": 2, "images": 1,
            "queued_at": "t", "cpu_budget_s": 1.0, "unread_inline": [[2, 1]]}  # fmt: skip
    old = {"expected": {"2": 1}, "queued_at": "t", "tasks": [task]}
    store.put_bytes(REF.plan_key, json.dumps(old).encode())
    assert read_plan(store, REF).tasks[0].unread_inline == ((2, 1, 0),)

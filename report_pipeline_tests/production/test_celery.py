"""Steps on Celery workers (REPORT_PIPELINE_EXECUTOR=celery), live: a real `redis-server` on a
free loopback port (no persistence), two worker processes (`report_pipeline.celery_worker`
under `celery_probe.py`, which records the files they open), each with its own working
directory, DAGSTER_HOME, work root and TMPDIR, sharing nothing but a fresh Postgres database
and the moto S3 server. The run is started as `dagster asset materialize` in its own process
(the orchestrator: it submits each step to Redis and waits for its result), with its own
DAGSTER_HOME and work root too.

Reading back: runs and events from Postgres, the archive from the S3 store, op outputs and
compute logs from the bucket, and each worker's file record."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pytest

from devstack import local_celery
from report_pipeline.core.model.settings import TARGET_UNITS
from report_pipeline.core.model.store_json import read_manifest
from report_pipeline_tests.production.celery_cluster import (
    MONTH,
    PAGES_PER_TASK,
    WORKERS,
    Cluster,
    cluster,
    engine_workers,
    step_counts,
)
from report_pipeline_tests.production.conftest import Backend

pytestmark = pytest.mark.live


def assert_checks_passed(instance: dg.DagsterInstance, run_id: str) -> None:
    """The month's eight checks, evaluated in the run (on the worker that published): all passed
    but report_archived_on_time, since the month's report is archived long after its due day."""
    checks = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    results = {e.dagster_event.event_specific_data.check_name: e.dagster_event.event_specific_data.passed for e in checks}  # fmt: skip  # noqa: E501
    assert len(results) == 8 and results.pop("report_archived_on_time") is False, results
    assert all(results.values()), results


def assert_one_complete_manifest(backend: Backend, month: str) -> None:
    """Exactly one manifest for the month, complete, and the archive matches it: every archived
    occurrence's object exists with its content hash, and no image object is unlisted."""
    store = backend.store()
    keys = [o.key for o in store.list(f"archive/inbox-{month}/")]
    (manifest_key,) = [k for k in keys if k.endswith("/manifest.json")]
    manifest = read_manifest(store, manifest_key)
    assert manifest.state == "complete" and manifest.counts.pages == 140
    assert manifest.counts.accounted == manifest.counts.expected == 423
    assert manifest.counts.pages_unaccounted == 0
    archived = {c.object_key: c.content_hash for c in manifest.children if c.state == "archived"}
    for key, content_hash in archived.items():
        assert hashlib.sha256(store.get_bytes(key, 2**26)).hexdigest() == content_hash, key
    images = {k for k in keys if "/images/" in k}
    assert images == set(archived), images ^ set(archived)


def assert_no_step_read_another_steps_local_file(c: Cluster) -> None:
    """From the workers' file records: no process opened anything under another worker's or
    the orchestrator's folders, and no task read a file another task (another step, or another
    attempt of the same step) wrote. Then, on disk: the workers' work roots hold no files and
    their DAGSTER_HOMEs no file but the instance file (each step's captured output was staged
    there and deleted once uploaded), the orchestrator's no more than that."""
    writers: dict[str, set[str]] = defaultdict(set)
    records = []
    for worker in c.workers:
        for line in c.files(worker):
            if line["op"] == "task":
                continue
            others = [w.root for w in c.workers if w is not worker] + [c.orchestrator]
            assert not any(line["path"].startswith(f"{o}{os.sep}") for o in others), line
            assert line["path"].startswith(f"{worker.root}{os.sep}"), line
            if line["op"] == "w":
                writers[line["path"]].add(line["task"])
            records.append(line)
    reads = [line for line in records if line["op"] == "r" and line["task"]]
    assert reads or writers  # the record works: steps do open local files
    for line in reads:
        assert writers.get(line["path"], {line["task"]}) <= {line["task"]}, line
    for worker in c.workers:
        assert [p for p in worker.work.rglob("*") if p.is_file()] == [], worker.name
        files = [p for p in worker.home.rglob("*") if p.is_file()]
        assert files == [worker.home / "dagster.yaml"], worker.name
    assert not (c.orchestrator / "work").exists()
    assert sorted(p.name for p in (c.orchestrator / "home").iterdir()) == ["dagster.yaml"]


def assert_outputs_and_logs_in_s3(c: Cluster, backend: Backend, run_id: str) -> None:
    """Every input a step loaded came through the S3 IO manager, every step's output is in the
    bucket, and every step's captured stdout/stderr was uploaded."""
    instance = c.instance
    loaded = instance.all_logs(run_id, of_type=dg.DagsterEventType.LOADED_INPUT)
    assert loaded
    assert {e.dagster_event.event_specific_data.manager_key for e in loaded} == {"io_manager"}
    keys = backend.keys()
    stepped = step_counts(instance, run_id, dg.DagsterEventType.STEP_SUCCESS)
    for step in stepped:  # mapped step `op[key]` writes under `op--key/`; the asset by its key
        prefix = f"dagster/io/storage/{run_id}/{step.replace('[', '--').rstrip(']')}/"
        if step == "report_manifest.publish_manifest":
            prefix = f"dagster/io/report_manifest/{MONTH}"
        assert any(k.startswith(prefix) for k in keys), step
    captured = instance.all_logs(run_id, of_type=dg.DagsterEventType.LOGS_CAPTURED)
    assert {s for e in captured for s in e.dagster_event.event_specific_data.step_keys} >= set(
        stepped
    )
    for entry in captured:
        log_key = entry.dagster_event.event_specific_data.file_key
        prefix = f"dagster/compute_logs/storage/{run_id}/compute_logs/{log_key}."
        assert {k.rsplit(".", 1)[1] for k in keys if k.startswith(prefix)} == {"out", "err"}


def test_page_groups_run_on_both_workers_sharing_only_postgres_and_s3(
    tmp_path: Path, postgres, backend: Backend, monkeypatch
):
    backend.drop("monthly_report.pdf", MONTH)
    with cluster(tmp_path, postgres, backend, monkeypatch) as c:
        started = time.monotonic()
        run = c.finish(c.materialize(MONTH))
        elapsed = time.monotonic() - started
        run_id, instance = run.run_id, c.instance

        succeeded = step_counts(instance, run_id, dg.DagsterEventType.STEP_SUCCESS)
        groups = [s for s in succeeded if s.startswith("report_manifest.extract_pages[")]
        assert len(groups) == 9 >= 8, succeeded  # the plan: 9 page groups, 20 steps
        assert set(succeeded.values()) == {1} and len(succeeded) == 2 * len(groups) + 2

        # steps ran on both workers: the worker Celery names for each step, and the worker
        # whose own record shows it running that step, agree
        taken = engine_workers(instance, run_id)
        assert sorted(step for step, _ in taken) == sorted(succeeded)
        assert {worker for _, worker in taken} == set(WORKERS), taken
        for worker in c.workers:
            ran = {line["steps"] for line in c.files(worker) if line["op"] == "task"}
            assert ran == {step for step, name in taken if name == worker.name}, worker.name
        # ...in the workers' pool processes, not the orchestrator
        pids = {line["pid"] for w in c.workers for line in c.files(w) if line["op"] == "task"}
        starts = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
        assert {e.dagster_event.pid for e in starts} <= pids

        # the worker that planned (stage_report) sized tasks for Celery, as the run's own
        # definitions would: run config chose 17 pages a group here
        outputs = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_OUTPUT)
        (staged,) = [
            data for e in outputs if (data := e.dagster_event.event_specific_data)
            and data.step_output_handle.step_key.endswith(".stage_report")
            and data.step_output_handle.output_name == "staged"
        ]  # fmt: skip
        assert staged.metadata["target_task_units"].value == TARGET_UNITS["celery"]
        assert staged.metadata["pages_per_task"].value == PAGES_PER_TASK

        assert_one_complete_manifest(backend, MONTH)
        assert_checks_passed(instance, run_id)
        assert_no_step_read_another_steps_local_file(c)
        assert_outputs_and_logs_in_s3(c, backend, run_id)
        print(f"celery run: {elapsed:.1f} s for {len(succeeded)} steps on {len(WORKERS)} workers")


def test_a_worker_killed_mid_step_has_its_step_redelivered_and_one_manifest_results(
    tmp_path: Path, postgres, backend: Backend, monkeypatch
):
    """w2 hangs inside its first extract_pages step (its workdir exists, the step has started)
    and is SIGKILLed with its whole process group, as when its host is lost. The step's message
    was never acknowledged (late ack): w1's sweep of Redis's unacked set gives it back to the
    queue once it is older than the visibility timeout (25 s here; every step in this test
    takes a few seconds) and w1 runs it. The run then completes with one manifest."""
    backend.drop("monthly_report.pdf", MONTH)
    with cluster(tmp_path, postgres, backend, monkeypatch, visibility_timeout=25, stall="w2") as c:
        w1, w2 = c.workers
        orchestrator = c.materialize(MONTH)
        marker = c.root / "w2.stalled"
        local_celery.wait_until(marker.exists, "w2 to be inside an extract_pages step", 120)
        local_celery.wait_until(lambda: marker.read_text(), "the marker's contents", 10)
        stalled = json.loads(marker.read_text())
        w2.kill()
        killed_at = time.monotonic()
        run = c.finish(orchestrator)
        recovered_in = time.monotonic() - killed_at

        step = stalled["steps"]
        assert step.startswith("report_manifest.extract_pages[")
        taken = engine_workers(c.instance, run.run_id)
        assert [name for key, name in taken if key == step] == ["w2", "w1"], taken
        starts = step_counts(c.instance, run.run_id, dg.DagsterEventType.STEP_START)
        succeeded = step_counts(c.instance, run.run_id, dg.DagsterEventType.STEP_SUCCESS)
        assert starts[step] == 2 and succeeded[step] == 1  # the killed attempt never ended
        assert set(succeeded.values()) == {1} and len(succeeded) == 20
        assert_one_complete_manifest(backend, MONTH)
        assert_checks_passed(c.instance, run.run_id)
        # the dead worker's workdir (it hung opening its lease) is left for the janitor, on its
        # own host only
        workdir = Path(stalled["path"]).parent
        assert workdir.is_dir() and workdir.is_relative_to(w2.work), workdir
        assert [p for p in w1.work.rglob("*") if p.is_file()] == []
        print(f"redelivered and finished {recovered_in:.1f} s after the kill")

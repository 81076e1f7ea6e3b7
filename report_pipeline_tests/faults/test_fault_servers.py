"""Issue 33, cases 1, 3 and 4: the servers around the runs fail while a backfill is in flight, on
the production configuration (live_servers.py: the test's own Postgres server, S3 on moto, the
code location as its own gRPC code server, a webserver and a daemon).

Case 3: the daemon is SIGKILLed mid-backfill (while it submits the backfill's runs) and started
again. Case 1: Postgres restarts (`pg_ctl restart -m fast`) under runs in flight, and is down for
60 s. Case 4: the code server is SIGKILLed under runs in flight and started again.

After each, the same invariants (`assert_months`): every month has exactly one successful run and
one complete current revision whose archive matches its manifest (each image stored once, by
content), or a failed run with its reason and a retry; no month was launched twice by the
backfill and no two runs of a month overlapped (the one-run-per-month guard); no run is left
queued, starting or started; no working material is left; the whole-archive checks (deadlines,
retention, archive against manifest) pass. `-s` prints each case's figures."""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter

import dagster as dg
import pytest

from devstack.fault_runs import leftovers, month_manifest, months_from
from report_pipeline.core.archive.months import revisions
from report_pipeline.core.model import keys
from report_pipeline_tests.faults.live_servers import Servers, production_servers
from report_pipeline_tests.intake.live import wait_for

pytestmark = pytest.mark.live

PAGES_PER_TASK = 3  # three page groups a month
DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
PARENT = "dagster/parent_run_id"
REPORT_ASSET = dg.AssetKey("report_manifest")


def is_report_run(run: dg.DagsterRun) -> bool:
    """A run of the month's report (not a `manifest_table` run its automation requests)."""
    return REPORT_ASSET in (run.asset_selection or set()) or run.job_name == "extract_report_job"


def month_runs(instance: dg.DagsterInstance, month: str) -> list[dg.RunRecord]:
    records = instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": month}))
    return sorted(records, key=lambda r: r.create_timestamp)


def materialized(instance: dg.DagsterInstance, run_id: str) -> bool:
    """The run materialized the month's report_manifest (its last step published)."""
    kind = dg.DagsterEventType.ASSET_MATERIALIZATION
    return any(
        e.dagster_event.asset_key == REPORT_ASSET for e in instance.all_logs(run_id, of_type=kind)
    )


def did_its_work(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """Succeeded; or failed after it had published (its worker died writing its last events to
    a database that was down): nothing is left to retry (Dagster refuses such a retry, "No steps
    needed to be retried in the failed run", and says "Failed to retry run" on the run page)."""
    if run.status == dg.DagsterRunStatus.SUCCESS:
        return True
    return run.status == dg.DagsterRunStatus.FAILURE and materialized(instance, run.run_id)


def settled(instance: dg.DagsterInstance, months: list[str]) -> bool:
    """Every month has a run that did its work, and no report run of any month is unfinished."""
    for month in months:
        runs = [r.dagster_run for r in month_runs(instance, month)]
        if not any(did_its_work(instance, r) for r in runs if is_report_run(r)):
            return False
        if any(r.status not in DONE for r in runs if is_report_run(r)):
            return False
    return True


REQUEUED = "Run dequeue failed to reach the user code server, re-submitting"
GENERIC = "This run has been marked as failed from outside the execution context."


def failure_reason(instance: dg.DagsterInstance, run_id: str) -> str:
    """What the run page says failed it: the RUN_FAILURE message or, when that is Dagster's
    generic one, the engine event just before it (the code server's "unexpectedly exited")."""
    events = instance.all_logs(run_id)
    kinds = [e.dagster_event_type for e in events]
    at = kinds.index(dg.DagsterEventType.RUN_FAILURE)
    if events[at].message != GENERIC:
        return events[at].message
    engine = [e.message for e, kind in zip(events[:at], kinds, strict=False)
              if kind == dg.DagsterEventType.ENGINE_EVENT]  # fmt: skip
    return f"{GENERIC} After: {engine[-1] if engine else '(no engine event)'}"


def assert_months(servers: Servers, months: list[str]) -> dict:
    """The issue's invariants over `months`; what was seen: retries used, failure reasons."""
    instance, store = servers.backfill.instance, servers.backfill.store
    seen = {"retries": 0, "reasons": [], "requeued": 0, "published_then_failed": []}
    for month in months:
        records = month_runs(instance, month)
        runs = [r.dagster_run for r in records if is_report_run(r.dagster_run)]
        assert [r for r in runs if r.status not in DONE] == [], (month, "unfinished run")
        done = [r for r in runs if did_its_work(instance, r)]
        assert len(done) == 1, (month, [(r.run_id, r.status) for r in runs])
        launched = [r for r in runs if PARENT not in r.tags]
        assert len(launched) == 1, (month, "launched twice", [r.run_id for r in launched])
        for run in runs:  # a failed run says why, and has its retry
            if run.status == dg.DagsterRunStatus.FAILURE:
                seen["reasons"].append(failure_reason(instance, run.run_id))
                children = [r for r in runs if r.tags.get(PARENT) == run.run_id]
                if did_its_work(instance, run):  # published, then died: nothing to retry
                    seen["published_then_failed"].append(month)
                    assert children == [], (month, run.run_id)
                else:
                    assert len(children) == 1, (month, run.run_id, "failed without one retry")
            seen["retries"] += PARENT in run.tags
            engine = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
            seen["requeued"] += sum(REQUEUED in (e.message or "") for e in engine)
        # any job's runs of the month (manifest_table's too), finished ones
        spans = sorted((r.start_time or 0, r.end_time) for r in records if r.end_time)
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start, (month, "two runs of the month overlapped", spans)
        manifest, _ = month_manifest(store, month)  # the month's one revision
        assert manifest.state == "complete", month
        prefix = keys.archive_prefix(manifest.report_id, manifest.parent_revision)
        listed = [o.key for o in store.list(f"{prefix}/{keys.IMAGES}/")]
        hashes = {c.content_hash for c in manifest.children if c.state == "archived"}
        wanted = {keys.image_key(manifest.report_id, manifest.parent_revision, h) for h in hashes}
        assert sorted(listed) == sorted(wanted), month  # each image once, nothing missing
        for key in listed:
            digest = hashlib.sha256(store.get_bytes(key, 1 << 26)).hexdigest()
            assert key.endswith(f"/{digest}.png"), key
    assert leftovers(store) == []  # no staged source, no outcomes left behind
    assert len(revisions(store)) == len(months)  # no revision without its month
    audit = servers.backfill.audit_job().execute_in_process(instance=instance)
    results = audit.get_asset_check_evaluations()
    assert results and all(r.passed for r in results), [(r.check_name, r.passed) for r in results]
    return seen


def backfill_runs(servers: Servers) -> list[dg.DagsterRun]:
    tags = {"dagster/backfill": servers.backfill.backfill_id}
    return list(servers.backfill.instance.get_runs(dg.RunsFilter(tags=tags)))


def launch(servers: Servers, months: list[str]) -> float:
    servers.live.set_sensor(running=False)  # as a person would, while the backfill runs
    for month in months:
        servers.backfill.drop(month)
    servers.backfill.launch(months, PAGES_PER_TASK)
    return time.monotonic()


def test_case3_the_daemon_killed_mid_backfill_resumes_it_and_launches_no_month_twice(
    tmp_path, backend, monkeypatch
):
    months = months_from("2025-01", 6)
    began = time.monotonic()
    with production_servers(tmp_path / "live", backend, monkeypatch) as servers:
        launched = launch(servers, months)
        servers.start_daemon()
        # The strike: the daemon dies as soon as the backfill's first run exists, while it is
        # still submitting the others (or its run queue launching them).
        wait_for(lambda: backfill_runs(servers), "the backfill's first run", 300)
        killed = servers.kill("daemon")
        at_kill = Counter(r.status.value for r in backfill_runs(servers))
        # Dead: no heartbeat, the run queue stops (queued runs stay queued) while runs already
        # launched go on under the code server. The UI's Daemons page still says healthy: it
        # tolerates 30 s + 1800 s without a heartbeat (Dagster's defaults).
        time.sleep(20)
        healthy = servers.daemons()
        assert all(healthy.values()), healthy  # not detected by the UI within the outage
        during = Counter(r.status.value for r in backfill_runs(servers))
        submitted_dead = len(backfill_runs(servers))
        servers.start_daemon()
        restarted = time.monotonic()
        wait_for(lambda: settled(servers.backfill.instance, months), "every month's run", 900)
        runs_done = time.monotonic() - restarted
        status = wait_for(servers.backfill.status, "the backfill to settle", 180)
        recovered = time.monotonic() - restarted
        assert status == "COMPLETED_SUCCESS"
        seen = assert_months(servers, months)
        runs = backfill_runs(servers)
        assert sorted(Counter(r.tags["dagster/partition"] for r in runs).items()) == [
            (m, 1) for m in months
        ]  # one run per month, whatever the daemon had submitted before it died
        assert servers.backfill.overlap() <= 2  # the run queue's report slots
    print(
        f"case 3: daemon killed {killed - launched:.1f} s after launch with runs {dict(at_kill)}; "
        f"20 s later {submitted_dead} submitted {dict(during)}, UI daemons still healthy "
        f"(flags after 1830 s); restart -> all runs done {runs_done:.0f} s, backfill "
        f"{status} {recovered:.0f} s; retries {seen['retries']}; wall "
        f"{time.monotonic() - began:.0f} s; load {os.getloadavg()[0]:.1f}"
    )
    assert seen["retries"] == 0 and seen["reasons"] == []


TICKS = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor {
    sensorState { ticks(limit: 20) { timestamp status } } } } }"""


def sensor_ticked_since(servers: Servers, sensor: str, since: float) -> bool:
    """The sensor's page in the UI shows a tick (skipped or requested) after `since` (Unix)."""
    selector = {"repositoryLocationName": "report_pipeline",
                "repositoryName": "__repository__", "sensorName": sensor}  # fmt: skip
    try:
        found = servers.live.graphql(TICKS, {"s": selector})["sensorOrError"]
    except Exception:  # noqa: BLE001 - the webserver may still be reconnecting
        return False
    ticks = (found.get("sensorState") or {}).get("ticks") or []
    return any(t["timestamp"] > since and t["status"] in ("SKIPPED", "SUCCESS") for t in ticks)


def in_flight(servers: Servers, months: list[str], skip: set[str] = frozenset()) -> str | None:
    """A report run executing (STARTED, at least one step done) of a month not in `skip`."""
    instance = servers.backfill.instance
    for month in months:
        for record in month_runs(instance, month):
            run = record.dagster_run
            if month in skip or not is_report_run(run):
                continue
            if run.status == dg.DagsterRunStatus.STARTED and instance.all_logs(
                run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS
            ):
                return month
    return None


def answers(servers: Servers) -> bool:
    """The webserver answers a runs query (it reads the database)."""
    try:
        servers.live.runs({"dagster/backfill": servers.backfill.backfill_id})
        return True
    except Exception:  # noqa: BLE001 - down or reconnecting
        return False


def test_case1_postgres_restarted_and_down_for_60s_under_a_backfill_loses_nothing(
    tmp_path, backend, monkeypatch
):
    months = months_from("2025-01", 4)
    began = time.monotonic()
    with production_servers(tmp_path / "live", backend, monkeypatch) as servers:
        launch(servers, months)
        servers.start_daemon()
        # Strike 1: `pg_ctl restart -m fast` with a run executing and months still queued.
        first = wait_for(lambda: in_flight(servers, months), "a run in flight", 600)
        restart_s = servers.pg_restart()
        restarted, restarted_at = time.monotonic(), time.time()
        wait_for(lambda: answers(servers), "the webserver to read the database again", 120)
        webserver_back = time.monotonic() - restarted
        wait_for(lambda: sensor_ticked_since(servers, "dead_run_sensor", restarted_at),
                 "a sensor tick after the restart", 180)  # fmt: skip
        sensors_back = time.monotonic() - restarted
        # Strike 2: down for 60 s under a second backfill's run, then back (the first one's
        # months may all be done by now).
        later = months_from("2025-05", 2)
        wait_for(lambda: settled(servers.backfill.instance, months), "the first backfill", 900)
        first_backfill = servers.backfill.backfill_id
        launch(servers, later)
        months = [*months, *later]
        second = wait_for(lambda: in_flight(servers, later), "a run of the second backfill", 600)
        servers.pg_stop()
        stopped = time.monotonic()
        time.sleep(60)
        servers.pg_start()
        started, started_at = time.monotonic(), time.time()
        wait_for(lambda: answers(servers), "the webserver after the outage", 120)
        webserver_back_2 = time.monotonic() - started
        wait_for(lambda: sensor_ticked_since(servers, "dead_run_sensor", started_at),
                 "a sensor tick after the outage", 180)  # fmt: skip
        sensors_back_2 = time.monotonic() - started
        wait_for(lambda: settled(servers.backfill.instance, months), "every month's run", 900)
        recovered = time.monotonic() - started
        seen = assert_months(servers, months)
        failed = {  # month -> marked failed, seconds after Postgres answered again
            r.dagster_run.tags["dagster/partition"]
            + ("" if is_report_run(r.dagster_run) else " manifest_table"): round(
                r.end_time - started_at
            )
            for m in months for r in month_runs(servers.backfill.instance, m)
            if r.dagster_run.status == dg.DagsterRunStatus.FAILURE and r.end_time
        }  # fmt: skip
        status = wait_for(servers.backfill.status, "the second backfill to settle", 240)
        servers.backfill.backfill_id = first_backfill
        status = f"{wait_for(servers.backfill.status, 'the first to settle', 240)}, {status}"
    print(
        f"case 1: restart ({restart_s:.1f} s) under {first}: webserver answers "
        f"{webserver_back:.1f} s after, a sensor ticks {sensors_back:.0f} s after; down 60 s "
        f"under {second}: webserver answers {webserver_back_2:.1f} s after start, a sensor ticks "
        f"{sensors_back_2:.0f} s after, every month done {recovered:.0f} s after; failed runs "
        f"{failed}, retries {seen['retries']}, published then failed "
        f"{seen['published_then_failed']}, reasons {seen['reasons']}; backfill "
        f"{status}; wall {time.monotonic() - began:.0f} s; load {os.getloadavg()[0]:.1f}"
    )
    assert stopped  # the outage began with a run in flight


def worker_of(instance: dg.DagsterInstance, run_id: str) -> int:
    """The pid of the run's worker (its RUN_START event)."""
    (start,) = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_START)
    return start.dagster_event.pid


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def failed_run_of(servers: Servers, month: str) -> dg.DagsterRun | None:
    runs = [r.dagster_run for r in month_runs(servers.backfill.instance, month)]
    return next((r for r in runs if r.status == dg.DagsterRunStatus.FAILURE), None)


def code_server_back(servers: Servers, since: float) -> tuple[float, float, bool]:
    """After a restart of the code server: seconds until the UI shows the location loaded (an
    operator's Reload if it has not within 90 s: `reloaded`), and until a sensor ticks."""
    began, reloaded = time.monotonic(), False
    try:
        wait_for(servers.location_loaded, "the UI to show the code location loaded", 90)
    except AssertionError:
        reloaded = True
        servers.reload_location()
        wait_for(servers.location_loaded, "the code location after a Reload", 60)
    loaded = time.monotonic() - began
    wait_for(lambda: sensor_ticked_since(servers, "dead_run_sensor", since),
             "a sensor tick after the code server's restart", 300)  # fmt: skip
    return loaded, time.monotonic() - began, reloaded


def test_case4_the_code_server_killed_under_runs_in_flight_fails_or_retries_them_with_a_reason(
    tmp_path, backend, monkeypatch
):
    months = months_from("2025-01", 4)
    began = time.monotonic()
    with production_servers(tmp_path / "live", backend, monkeypatch) as servers:
        instance = servers.backfill.instance
        launch(servers, months)
        servers.start_daemon()
        # Strike 1: the code server's process alone is SIGKILLed (an OOM kill of that process);
        # its run workers, its children, are orphaned and go on.
        first = wait_for(lambda: in_flight(servers, months), "a run in flight", 600)
        (orphan,) = [r for r in month_runs(instance, first) if is_report_run(r.dagster_run)]
        servers.kill("code-server")
        time.sleep(5)  # a supervisor's restart delay
        servers.start_code_server()
        loaded_1, sensors_1, reloaded_1 = code_server_back(servers, time.time())
        # Strike 2: the code server's whole process group (its container) is SIGKILLed, its run
        # workers with it: nobody is left to mark their runs failed but dead_run_sensor.
        later = months_from("2025-05", 2)  # a second backfill: the first may be done by now
        wait_for(lambda: settled(instance, months), "the first backfill", 900)
        first_backfill = servers.backfill.backfill_id
        launch(servers, later)
        months = [*months, *later]
        second = wait_for(lambda: in_flight(servers, later), "a run of the second backfill", 600)
        killed_2 = servers.kill("code-server", group=True)
        time.sleep(5)
        servers.start_code_server()
        loaded_2, sensors_2, reloaded_2 = code_server_back(servers, time.time())
        wait_for(lambda: failed_run_of(servers, second), "the killed run marked failed", 300)
        detected_2 = time.monotonic() - killed_2
        wait_for(lambda: settled(instance, months), "every month's run", 900)
        recovered_2 = time.monotonic() - killed_2
        seen = assert_months(servers, months)
        orphan_run = instance.get_run_by_id(orphan.dagster_run.run_id)
        orphan_pid = worker_of(instance, orphan_run.run_id)
        status = wait_for(servers.backfill.status, "the second backfill to settle", 240)
        servers.backfill.backfill_id = first_backfill
        status = f"{wait_for(servers.backfill.status, 'the first to settle', 240)}, {status}"
    print(
        f"case 4: server process killed under {first}: that run {orphan_run.status.value} "
        f"(orphan worker still alive after: {alive(orphan_pid)}), UI location loaded "
        f"{loaded_1:.0f} s after restart (Reload needed: {reloaded_1}), a sensor ticks "
        f"{sensors_1:.0f} s after; server group killed under {second}: UI location loaded "
        f"{loaded_2:.0f} s after restart (Reload needed: {reloaded_2}), a sensor ticks "
        f"{sensors_2:.0f} s after, run failed {detected_2:.0f} s after the kill, every month "
        f"done {recovered_2:.0f} s after; retries {seen['retries']}, dequeues put back in the "
        f"queue {seen['requeued']}, reasons {seen['reasons']}; "
        f"backfill {status}; wall {time.monotonic() - began:.0f} s; load {os.getloadavg()[0]:.1f}"
    )
    assert seen["reasons"], "the group kill failed a run, with its reason"

"""Issue 33, case 5: S3 answers 503 SlowDown for 60 s, longer than one retry's backoff, and then
recovers.

The production configuration: a Postgres instance, the store, the report source, op outputs and
compute logs on S3 (moto's server, loopback). Every S3 client of the run (the store's, the S3 IO
manager's, the compute log manager's, the report source's) is sent to a second server on the
same buckets that answers real HTTP 503 SlowDown responses for OUTAGE_S seconds
(devstack/local_s3.py `SlowDown`), from the moment the run uploads its STRIKE_AT-th image: so
the outage strikes mid-extraction, after some images are archived, and botocore's own retry
logic meets it (standard mode, exponential backoff with full jitter on a 1 s base for throttling:
the store's client makes 4 attempts a call, within ~7 s; the S3 IO manager's 6, within ~31 s),
then the ops' STORAGE_RETRY (4 attempts a step, 0.5 s doubling, jitter). The run's steps take
turns on the in-process executor, so a step waiting for its retry lets the next one spend its
own attempts: the run rides a minute out unless one step uses up its 4 attempts inside it. Both
endings are the issue's: ridden out, the run itself publishes after S3 answers again; else its
steps end as dead letters naming SlowDown, nothing reads "complete", and "re-execute from
failure" (the operator's retry path: run retries do not re-run a step failure) publishes once S3
answers again. Either way: exactly one complete manifest over what the outage left, no image
archived twice, none half written, none lost, no leftover past the next janitor pass, deadlines
the manifest's, an audit event for every deletion, every retry and failure naming SlowDown, no
call or step past its attempts. Everything is read back through the tests' own S3 server, which
the outage does not touch."""

from __future__ import annotations

import hashlib
import time
from datetime import timedelta

import dagster as dg
import pytest

from devstack.fault_runs import MonthRun, leftovers, month_manifest, step_attempts, verify_month
from devstack.local_s3 import SlowDown
from report_pipeline.core.archive.months import revisions
from report_pipeline.core.checks import retention_audit
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import parse_iso
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.retention import deletion_log, janitor
from report_pipeline.defs.reports.guard import MAX_TRIES
from report_pipeline_tests.faults import fault_job
from report_pipeline_tests.held_run import assert_archive_matches, listing
from report_pipeline_tests.production.conftest import INBOX_PREFIX, STORE_PREFIX
from report_pipeline_tests.s3 import start_server

pytestmark = pytest.mark.live

OUTAGE_S = 60.0  # the minute
STRIKE_AT = 3  # the outage begins at the run's third image upload
REPORT = "image_paths.pdf"  # 9 pages, 11 distinct images
PAGES_PER_TASK = 3  # three page groups: three extract_pages steps
MIN = timedelta(minutes=1)
DETECTING = {dg.DagsterEventType.STEP_UP_FOR_RETRY, dg.DagsterEventType.STEP_FAILURE}
PUBLISHED = {dg.DagsterEventType.ASSET_MATERIALIZATION}  # report_manifest's, at its publish


def at_upload(folder: str, count: int):
    """`SlowDown.starts`: true from the `count`-th PUT under the store's `folder` on."""
    seen = []

    def starts(method: str, path: str) -> bool:
        if method == "PUT" and f"/{folder}/" in path:
            seen.append(path)
        return len(seen) >= count

    return starts


# Where the outage strikes: as extraction uploads its STRIKE_AT-th image (some archived before
# it; the steps take turns riding it out), or as staging uploads the report (nothing archived; a
# step with no input to load, whose 4 attempts end well inside a minute: a dead letter).
STRIKES = {"extraction": (keys.IMAGES, STRIKE_AT), "staging": (keys.STAGED, 1)}


@pytest.fixture(params=sorted(STRIKES))
def slowdown(request, backend, pg_env, monkeypatch):
    """The outage, armed: every S3 client the run makes goes to a server that will answer 503
    SlowDown for OUTAGE_S seconds from the upload STRIKES names (set before the instance is
    made, so its compute log manager goes there too)."""
    outage = SlowDown(OUTAGE_S, at_upload(*STRIKES[request.param]))
    server, endpoint = start_server(outage)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    try:
        yield outage
    finally:
        server.shutdown()
        server.server_close()


CLIENTS = {"store": f"{STORE_PREFIX}/", "source": f"{INBOX_PREFIX}/", "io": "dagster/io/",
           "logs": "dagster/compute_logs/"}  # fmt: skip


def images_whole(store, month: str) -> dict[str, float]:
    """Every image object of the month's revisions, each one's bytes what its key says (none
    half written): key -> modification time."""
    found = {}
    for report_id, revision in revisions(store, month):
        prefix = f"{keys.archive_prefix(report_id, revision)}/{keys.IMAGES}/"
        for key, modified in listing(store, prefix).items():
            digest = hashlib.sha256(store.get_bytes(key, 1 << 26)).hexdigest()
            assert key.endswith(f"/{digest}.png"), key
            found[key] = modified
    return found


def botocore_retries(outage: SlowDown) -> dict[str, int]:
    """What the clients' own retries did: calls that met the outage, attempts throttled, the
    retries among them, and the most attempts one call made (against its client's maximum)."""
    calls: dict[str, list] = {}
    for request in outage.requests:
        if request.invocation:
            calls.setdefault(request.invocation, []).append(request)
    struck = {k: v for k, v in calls.items() if any(r.status == 503 for r in v)}
    for attempts in calls.values():  # bounded: no call past its client's maximum
        assert max(r.attempt for r in attempts) <= attempts[0].max_attempts
    return {
        "calls_struck": len(struck),
        "throttled": len(outage.throttled()),
        "retries": sum(r.attempt > 1 for r in outage.throttled()),
        "most_attempts": max((len(v) for v in struck.values()), default=0),
        # the most attempts a call makes, per client (by where it reads and writes): the store
        # and the report source (CLIENT_RETRIES + 1), the S3 IO manager (6), the compute logs
        "max_attempts": {
            client: sorted(
                {
                    r.max_attempts
                    for r in outage.requests
                    if r.max_attempts and f"/{folder}" in r.path
                }
            )
            for client, folder in CLIENTS.items()
        },  # fmt: skip
    }


def messages(error) -> str:
    """An error's message with its causes' (SerializableErrorInfo)."""
    return "" if error is None else f"{error.message} {messages(error.cause)}"


def retry_reasons(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """(step, error with its causes) for every step failure and every retry of the run."""
    kinds = {dg.DagsterEventType.STEP_UP_FOR_RETRY, dg.DagsterEventType.STEP_FAILURE}
    found = []
    for entry in instance.all_logs(run_id, of_type=kinds):
        event = entry.dagster_event
        data = event.event_specific_data
        error = data.error if hasattr(data, "error") else None
        found.append((event.step_key, messages(error)))
    return found


def test_a_minute_of_slowdown_is_ridden_out_or_dead_letters_that_reexecute_into_one_manifest(
    slowdown, production_instance, backend, clock, request
):
    instance, store, month = production_instance, backend.store(), clock.latest_partition
    backend.drop(REPORT, month)
    with fault_job.run(instance, month, PAGES_PER_TASK) as first:
        run_id, rode_it_out = first.run_id, first.success
    assert slowdown.began is not None, "the run never reached the upload the outage waits for"
    began, ends = slowdown.began_wall, slowdown.began_wall + OUTAGE_S
    boto = botocore_retries(slowdown)  # each call within its client's attempts (asserted)
    assert boto["max_attempts"]["store"] == [4]  # CLIENT_RETRIES = 3: 4 attempts
    assert boto["retries"] > 0 and boto["throttled"] > 0

    # Bounded: no step past its attempts; one clear reason: every retry and every failure of
    # the run names the throttling (the guard's words, or the S3 IO manager's botocore error).
    attempts = step_attempts(instance, run_id)
    assert max(attempts.values()) <= MAX_TRIES, attempts
    reasons = retry_reasons(instance, run_id)
    assert reasons, "the outage was never seen"
    assert all("SlowDown" in why for _, why in reasons), reasons
    detected = fault_job.first_event_time(instance, run_id, DETECTING) - began
    (record,) = instance.get_run_records(dg.RunsFilter(run_ids=[run_id]))
    run_ended = record.end_time - began  # succeeded, or failed with its dead letters

    if rode_it_out:  # retries outlasted the outage: the run itself published, after it ended
        healed = run_id
        before: dict[str, float] = {}
        published = fault_job.first_event_time(instance, run_id, PUBLISHED)
        assert published > ends
        verify_month(store, MonthRun(month, run_id, True, 0.0, attempts))  # attempts = steps'
    else:  # dead letters: the run failed, and the operator re-executes from failure
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
        for failure in fault_job.step_failures(instance, run_id):
            error = failure.step_failure_data
            if error.user_failure_data:  # the guard's dead letter: retries used up
                assert error.user_failure_data.metadata["reason"].value == "storage"
                assert error.user_failure_data.metadata["attempts"].value == MAX_TRIES
                assert attempts[failure.step_key] == MAX_TRIES
        # Nothing half-archived: no manifest, so nothing reads "complete"; every image stored
        # is whole (S3 stores a PUT whole or not at all) and is its key's bytes.
        assert [k for k in listing(store, f"{keys.ARCHIVE}/") if k.endswith(keys.MANIFEST)] == []
        before = images_whole(store, month)
        time.sleep(max(0.0, slowdown.ends - time.monotonic()))  # S3 answers again
        with fault_job.reexecute_from_failure(instance, run_id) as second:
            assert second.success, retry_reasons(instance, second.run_id)
            healed = second.run_id
        assert max(step_attempts(instance, healed).values()) == 1  # S3 answers: no retry
        published = fault_job.first_event_time(instance, healed, PUBLISHED)
    recovered = published - ends
    assert not [r for r in slowdown.requests if r.status == 503 and r.at >= slowdown.ends]

    manifest, _ = month_manifest(store, month)  # one revision, one complete manifest
    report_id, revision = manifest.report_id, manifest.parent_revision
    key = keys.manifest_key(report_id, revision)
    assert manifest.state == "complete"
    assert manifest.counts.pages_unaccounted == 0 and manifest.counts.quarantined == 0
    assert store_json.read_manifest(store, key) == manifest
    referenced = assert_archive_matches(store, manifest)  # every image once, none missing
    after = images_whole(store, month)
    assert {k: after[k] for k in before} == before  # none written again (same time)
    assert len(after) == manifest.counts.distinct_images
    assert leftovers(store) == []  # no staged source, no outcomes
    events = deletion_log.read(store, clock.now - timedelta(days=1))
    assert [(e.kind, e.revision) for e in events] == [("working_material", revision)]

    # The next janitor pass, past every short deadline, finds nothing left to delete.
    settings = PipelineSettings(backend.root / "work")
    policy = settings.retention
    late = clock.now + policy.unfinished_hold + 11 * MIN
    sweep = janitor.run(store, settings.work_root, late, policy)
    assert sweep.deletions == [] and listing(store, f"{keys.WORK_INDEX}/") == {}
    outcomes = retention_audit.audit_all(store, settings.work_root, late, policy)
    assert all(o.passed for o in outcomes), [(o.name, o.passed) for o in outcomes]
    assert referenced <= set(listing(store, keys.archive_prefix(report_id, revision)))
    (marker,) = [k for k in listing(store, f"{keys.ARCHIVE_INDEX}/") if k.endswith(revision)]
    stated = parse_iso(manifest.deadlines.archive_delete_by)
    assert keys.parse_deadline_key(marker).deadline == stated.replace(second=0, microsecond=0)

    retried = sum(attempts.values()) - len(attempts)
    how = "rode it out" if rode_it_out else "dead letters, re-executed from failure"
    where = request.node.callspec.params["slowdown"]
    print(f"case 5 (production, {OUTAGE_S:.0f} s SlowDown at {where}): {how}; detected "
          f"{detected:.1f} s after it began, run ended at {run_ended:.1f} s; published "
          f"{recovered:.1f} s after S3 answered again; step retries {retried} (most of one step "
          f"{max(attempts.values())}); botocore {boto}")  # fmt: skip

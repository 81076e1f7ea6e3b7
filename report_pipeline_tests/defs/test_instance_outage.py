"""Dagster's database fails under a step (issue 26's database, the timing that
test_fault_servers.py case 1 hits only sometimes): Postgres restarted while Dagster itself wrote
a step's event. The step fails in Dagster's code, before ours; the run is marked for run retries
(defs/reports/guard.py, `retry_after_instance_outage`), and its re-execution from failure, what
run retries launch, completes the month. A dead letter of ours is still not retried."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.defs.reports.guard import RETRY_ON_FAILURE_TAG, instance_outage
from report_pipeline_tests.defs.conftest import events
from report_pipeline_tests.defs.outage_storage import MARKER, instance_yaml
from report_pipeline_tests.operate import reexec_job
from report_pipeline_tests.operate.reexec_job import FAULT
from report_pipeline_tests.operate.test_reexecution import (
    MONTH,
    assert_one_complete_manifest,
    prepare_root,
)

pytestmark = pytest.mark.slow

TAGS = {"dagster/partition": MONTH}
WILL_RETRY = "dagster/will_retry"


@pytest.fixture
def root(tmp_path: Path, monkeypatch) -> Path:
    return prepare_root(tmp_path, monkeypatch)


def outage_instance(root: Path, step: str, event_type: str) -> dg.DagsterInstance:
    """`root`'s instance, its event log failing once at (`step`, `event_type`)."""
    home = root / "home"
    (home / "dagster.yaml").write_text(instance_yaml(home, step, event_type))
    return dg.DagsterInstance.from_config(str(home))


def run(instance: dg.DagsterInstance, tags: dict = TAGS, **options) -> dg.ExecuteJobResult:
    job = dg.reconstructable(reexec_job.job)  # extract_report_job, roots from the environment
    return dg.execute_job(job, instance, tags=tags, raise_on_error=False, **options)


@pytest.mark.parametrize(
    ("step", "event_type"),
    [
        ("publish_manifest", "STEP_INPUT"),
        ("stage_report", "STEP_OUTPUT"),
        ("extract_pages", "STEP_START"),
        ("manifest_table", "STEP_START"),
    ],  # fmt: skip
)
def test_a_step_failed_by_the_database_is_retried_and_its_retry_completes_the_month(
    root, step, event_type
):
    with outage_instance(root, step, event_type) as instance:
        failed = run(instance)
        assert not failed.success and (root / "home/history/runs" / MARKER).exists()
        (failure,) = events(failed, "STEP_FAILURE")
        assert failure.step_key.rsplit(".", 1)[-1].startswith(step)
        assert "OperationalError" in failure.step_failure_data.error.message
        marked = instance.get_run_by_id(failed.run_id)
        assert marked.tags[RETRY_ON_FAILURE_TAG] == "true" and marked.tags[WILL_RETRY] == "true"
        options = dg.ReexecutionOptions.from_failure(failed.run_id, instance)
        assert run(instance, reexecution_options=options).success  # what run retries launch
    assert_one_complete_manifest(root)


def test_a_dead_letter_of_ours_is_still_not_retried(root):
    (root / "inbox" / MONTH / "report.pdf").write_bytes(b"not a pdf at all\n" * 10)
    with outage_instance(root, "never", "STEP_INPUT") as instance:
        refused = run(instance)
        (failure,) = events(refused, "STEP_FAILURE")
        assert "report refused" in failure.step_failure_data.error.message
        marked = instance.get_run_by_id(refused.run_id)
        assert RETRY_ON_FAILURE_TAG not in marked.tags and marked.tags[WILL_RETRY] == "false"


def test_a_retry_that_inherited_the_tag_and_meets_a_dead_letter_is_not_retried_again(
    root, monkeypatch
):
    """Run retries copy the parent's tags, the retry tag among them: a dead letter in the retry
    (a permanent storage error writing the manifest) turns it off again."""
    with outage_instance(root, "publish_manifest", "STEP_INPUT") as instance:
        failed = run(instance)
        parent = instance.get_run_by_id(failed.run_id)
        assert parent.tags[RETRY_ON_FAILURE_TAG] == "true"
        inherited = {k: v for k, v in parent.tags.items() if k != WILL_RETRY}  # as the daemon
        monkeypatch.setenv(FAULT, "put_bytes:1:archive/*/manifest.json")
        options = dg.ReexecutionOptions.from_failure(failed.run_id, instance)
        retry = run(instance, inherited, reexecution_options=options)
        (failure,) = events(retry, "STEP_FAILURE")
        assert "dead letter" in failure.step_failure_data.error.message
        child = instance.get_run_by_id(retry.run_id)
        assert child.tags[RETRY_ON_FAILURE_TAG] == "false" and child.tags[WILL_RETRY] == "false"


def database_error(driver_error: Exception) -> Exception:
    import sqlalchemy.exc

    return sqlalchemy.exc.OperationalError("SELECT 1", {}, driver_error)


def chained(outer: Exception, cause: Exception) -> Exception:
    try:
        try:
            raise cause
        except Exception as inner:
            raise outer from inner
    except Exception as raised:
        return raised


@pytest.mark.parametrize(
    ("error", "outage"),
    [
        (database_error(Exception("server closed the connection unexpectedly")), True),
        (chained(dg.Failure("dead letter: unexpected OperationalError"),
                 database_error(Exception("the database system is starting up"))), True),
        (__import__("sqlite3").OperationalError("database is locked"), True),
        (dg.Failure("report refused (not_pdf): ..."), False),
        (chained(dg.Failure("dead letter after 4 attempt(s)"), TimeoutError("S3")), False),
        (__import__("sqlalchemy").exc.IntegrityError("INSERT", {}, Exception("dup")), False),
        (None, False),
    ],
)  # fmt: skip
def test_what_counts_as_the_database_failing(error, outage):
    assert instance_outage(error) is outage

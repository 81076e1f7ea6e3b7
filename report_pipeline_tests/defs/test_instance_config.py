"""The committed dagster_home/dagster.yaml, loaded as `make dev` and `make demo` load it."""

import shutil
import sys
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline_tests.defs.conftest import events

pytestmark = pytest.mark.slow

INSTANCE_YAML = Path(__file__).resolve().parents[2] / "dagster_home" / "dagster.yaml"


@dg.op
def chatty(context: dg.OpExecutionContext) -> None:
    print("to stdout")
    print("to stderr", file=sys.stderr)
    context.log.info("an info line")
    context.log.debug("a debug line")


@dg.job(executor_def=dg.in_process_executor)
def chatty_job():
    chatty()


def committed_instance(tmp_path: Path) -> dg.DagsterInstance:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(INSTANCE_YAML, home / "dagster.yaml")
    return dg.DagsterInstance.from_config(str(home))


def test_compute_logs_land_in_the_instance_storage_where_the_ui_reads_them(tmp_path: Path):
    with committed_instance(tmp_path) as instance:
        manager = instance.compute_log_manager
        assert type(manager).__name__ == "LocalComputeLogManager"  # Dagster's stock manager
        result = chatty_job.execute_in_process(instance=instance)
        assert result.success
        (captured,) = events(result, "LOGS_CAPTURED")
        log_key = [result.run_id, "compute_logs", captured.logs_captured_data.file_key]
        assert manager.is_capture_complete(log_key)
        data = manager.get_log_data(log_key)
        assert b"to stdout" in data.stdout
        assert b"to stderr" in data.stderr
        assert b"STEP_START" in data.stderr and b"STEP_SUCCESS" in data.stderr  # the console
        out = Path(manager.get_captured_local_path(log_key, "out"))
        assert (tmp_path / "dagster_home" / "storage") in out.parents


def test_the_console_and_the_event_log_keep_debug_lines(tmp_path: Path):
    """At INFO the console printed none of Dagster's (DEBUG) step events: empty captured files,
    and the UI's "No log file available" for a step's stdout and stderr."""
    with committed_instance(tmp_path) as instance:
        result = chatty_job.execute_in_process(instance=instance)
        entries = [r.event_log_entry for r in instance.get_records_for_run(result.run_id).records]
        messages = [entry.user_message for entry in entries]
        assert "an info line" in messages and "a debug line" in messages
        (captured,) = events(result, "LOGS_CAPTURED")
        log_key = [result.run_id, "compute_logs", captured.logs_captured_data.file_key]
        stderr = instance.compute_log_manager.get_log_data(log_key).stderr
        assert b"a debug line" in stderr and b"an info line" in stderr

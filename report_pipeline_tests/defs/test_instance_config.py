"""The committed dagster_home/dagster.yaml, loaded as `make dev` and `make demo` load it."""

import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.defs.compute_logs import FileComputeLogManager
from report_pipeline_tests.defs.conftest import events

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
        assert isinstance(manager, FileComputeLogManager)
        result = chatty_job.execute_in_process(instance=instance)
        assert result.success
        (captured,) = events(result, "LOGS_CAPTURED")
        log_key = [result.run_id, "compute_logs", captured.logs_captured_data.file_key]
        assert manager.is_capture_complete(log_key)
        data = manager.get_log_data(log_key)
        assert b"to stdout" in data.stdout
        assert b"to stderr" in data.stderr
        out = Path(manager.get_captured_local_path(log_key, "out"))
        assert (tmp_path / "dagster_home" / "storage") in out.parents


def test_the_event_log_keeps_info_lines_and_drops_debug_lines(tmp_path: Path):
    with committed_instance(tmp_path) as instance:
        result = chatty_job.execute_in_process(instance=instance)
        entries = [r.event_log_entry for r in instance.get_records_for_run(result.run_id).records]
        messages = [entry.user_message for entry in entries]
        assert "an info line" in messages
        assert "a debug line" not in messages
        kinds = {entry.dagster_event_type for entry in entries if entry.is_dagster_event}
        assert dg.DagsterEventType.STEP_SUCCESS in kinds  # Dagster's events whatever the level


def test_capturing_starts_no_tail_or_watcher_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def recording_popen(args, *rest, **kwargs):
        started.append([str(a) for a in args])
        return real_popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording_popen)
    with committed_instance(tmp_path) as instance:
        assert chatty_job.execute_in_process(instance=instance).success
    assert started == []  # Dagster's LocalComputeLogManager starts tail -F + a watcher per stream

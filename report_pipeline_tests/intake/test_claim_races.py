"""One run per revision on a real sqlite instance, in the orders a race can take: `submit` and
the sensor either way round (also while the daemon is still launching the sensor's run), and a
UI launch or backfill of the same month before or after the sensor."""

from __future__ import annotations

import threading
import time

import dagster as dg
import pytest

from report_pipeline.core.intake import claims
from report_pipeline.core.intake.submission import REVISION_TAG, submit
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline.defs.reports.sensors import new_report_sensor

pytestmark = pytest.mark.slow


class InstanceLauncher:
    """`submit`'s Launcher on the instance itself: what the webserver's launchRun does (a run of
    extract_report_job with these tags, not started yet), without the HTTP and the queue (a
    QUEUED run needs a code location's origin; NOT_STARTED counts the same for claims)."""

    def __init__(self, instance: dg.DagsterInstance, job: dg.JobDefinition) -> None:
        self.instance, self.job = instance, job

    def runs_tagged(self, key: str, value: str) -> list[tuple[str, str]]:
        runs = self.instance.get_runs(filters=dg.RunsFilter(tags={key: value}))
        return [(run.run_id, run.status.value) for run in runs]

    def launch(self, month: str, stage_config: dict[str, str], tags: dict[str, str]) -> str:
        return self.queue(stage_report_run_config(stage_config), {"dagster/partition": month,
                                                                  **tags})  # fmt: skip

    def queue(self, run_config: dict, tags: dict[str, str]) -> str:
        run = self.instance.create_run_for_job(
            self.job, run_config=run_config, tags=tags, status=dg.DagsterRunStatus.NOT_STARTED
        )
        return run.run_id


@pytest.fixture
def launcher(defs, instance) -> InstanceLauncher:
    return InstanceLauncher(instance, defs.resolve_job_def("extract_report_job"))


def tick(instance, resources) -> dg.SensorResult:
    return new_report_sensor(dg.build_sensor_context(instance=instance, resources=resources))


def call_submit(path, resources, launcher):
    inbox, settings = resources["inbox"], resources["settings"].settings()
    return submit(str(path), "2026-09", inbox.report_sources(), settings, lambda m: True,
                  launcher, resources["store"].get_store())  # fmt: skip


def daemon_launch(launcher: InstanceLauncher, request: dg.RunRequest) -> str:
    """What the daemon does with a sensor's run request."""
    tags = {**request.tags, "dagster/partition": request.partition_key,
            "dagster/run_key": request.run_key}  # fmt: skip
    return launcher.queue(request.run_config, tags)


def test_submit_first_then_the_sensor_requests_nothing(drop, resources, launcher, instance):
    path = drop("no_images.pdf", folder="2026-09")
    done = call_submit(path, resources, launcher)
    assert done.status == "launched"
    skipped = tick(instance, resources)
    assert skipped.run_requests == []
    assert f"already has run {done.run_id}" in skipped.skip_reason.skip_message
    assert len(launcher.runs_tagged(REVISION_TAG, done.admission.revision)) == 1


def test_sensor_first_then_submit_while_the_daemon_is_still_launching_finds_its_run(
    drop, resources, launcher, instance
):
    path = drop("no_images.pdf", folder="2026-09")
    (request,) = tick(instance, resources).run_requests  # claimed; no run exists yet
    answers = []
    racer = threading.Thread(target=lambda: answers.append(call_submit(path, resources, launcher)))
    racer.start()
    time.sleep(1.0)  # the submit has found no run and waits on the sensor's claim
    run_id = daemon_launch(launcher, request)
    racer.join(timeout=30)
    (answer,) = answers
    assert (answer.status, answer.run_id) == ("duplicate", run_id)
    assert launcher.runs_tagged(REVISION_TAG, request.run_key) == [(run_id, "NOT_STARTED")]


def test_a_backfill_run_that_stages_before_the_sensors_run_extracts_nothing(
    drop, resources, launcher, instance, defs, capsys
):
    drop("no_images.pdf", folder="2026-09")
    (request,) = tick(instance, resources).run_requests
    sensor_run = daemon_launch(launcher, request)  # queued behind the backfill's run
    job = defs.resolve_job_def("extract_report_job")
    backfill = job.execute_in_process(instance=instance, partition_key="2026-09")  # as the UI
    assert backfill.success and backfill.get_asset_materialization_events() == []
    said = f"nothing extracted in this run: revision {request.run_key} already has run {sensor_run}"
    assert said in capsys.readouterr().err
    assert claims.current(resources["store"].get_store(), request.run_key).claimer == "sensor"
    later = job.execute_in_process(
        instance=instance, run_config=request.run_config, partition_key="2026-09",
        tags={**request.tags, "dagster/run_key": request.run_key},
    )  # fmt: skip
    # the sensor's run (a new run id in-process, with its tags: the claim's token)
    (event,) = [
        e for e in later.get_asset_materialization_events()
        if e.asset_key == dg.AssetKey("report_manifest")
    ]  # fmt: skip
    assert event.materialization.metadata["reused_existing_manifest"].value is False


def test_the_sensor_leaves_a_month_to_a_ui_launch_that_has_not_read_its_report(
    drop, resources, launcher, instance, defs
):
    drop("no_images.pdf", folder="2026-09")
    pending = launcher.queue({}, {"dagster/partition": "2026-09"})  # a backfill's queued run
    skipped = tick(instance, resources)
    assert skipped.run_requests == []
    assert skipped.skip_reason.skip_message == (
        f"inbox 2026-09/no_images.pdf: run {pending} has not read its report yet; looking again "
        "next tick"
    )
    assert not (resources["store"].get_store().root / "claims").exists()  # nothing claimed
    instance.delete_run(pending)  # ... and in its place the run as it stages (claims, tags)
    ui = defs.resolve_job_def("extract_report_job").execute_in_process(
        instance=instance, partition_key="2026-09"
    )
    assert ui.success and len(ui.get_asset_materialization_events()) == 2  # + manifest_table
    assert f"already has run {ui.run_id}" in tick(instance, resources).skip_reason.skip_message

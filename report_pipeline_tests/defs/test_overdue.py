"""overdue_report_sensor: a month with no archived report by day N of the next month is a WARN
on that month's report_archived_on_time, without anyone backfilling to find out."""

import json

import dagster as dg
import pytest

from report_pipeline.core.model.clock import parse_iso
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.overdue import overdue_report_sensor

pytestmark = pytest.mark.slow


def tick(instance, resources, at: str, cursor: str | None = None, due_day: int = 5):
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor,
        resources={"store": resources["store"], "clock": ClockResource(fixed=at),
                   "checks": CheckSettingsResource(due_day=due_day)},
    )  # fmt: skip
    return overdue_report_sensor(context)


def test_overdue_months_warn_on_their_own_partition_once(inbox, instance, resources):
    inbox("no_images.pdf")
    assert dg.materialize(
        [report_manifest], partition_key="2026-10", instance=instance, resources=resources
    ).success
    early = tick(instance, resources, "2026-11-05T23:00:00Z")  # October due end of Nov 5
    warned = {e.partition for e in early.asset_events}
    assert "2026-09" in warned and "2026-10" not in warned
    everything = monthly_partitions.get_partition_keys(current_time=parse_iso("2026-11-05T23:00Z"))
    assert everything[-1] == "2026-10" and warned == set(everything[:-1])  # all up to 2026-09
    later = tick(instance, resources, "2026-12-06T01:00:00Z", cursor=early.cursor)
    assert [e.partition for e in later.asset_events] == ["2026-11"]  # only the new one
    (november,) = later.asset_events
    assert (november.check_name, november.passed) == ("report_archived_on_time", False)
    assert november.severity == dg.AssetCheckSeverity.WARN
    assert november.metadata["hours_before_due"].value < 0
    assert "2026-10" in json.loads(later.cursor)["settled"]  # archived: not looked at again
    quiet = tick(instance, resources, "2026-12-06T02:00:00Z", cursor=later.cursor)
    assert quiet.asset_events == [] and quiet.skip_reason


def test_the_warning_is_recorded_on_the_month_as_the_daemon_records_it(instance, resources):
    result = tick(instance, resources, "2026-12-06T01:00:00Z", due_day=5)
    november = next(e for e in result.asset_events if e.partition == "2026-11")
    instance.report_runless_asset_event(november)  # what the sensor daemon does with them
    key = dg.AssetCheckKey(report_manifest.key, "report_archived_on_time")
    (record,) = instance.event_log_storage.get_asset_check_execution_history(key, limit=5)
    assert (record.status.value, record.partition) == ("FAILED", "2026-11")
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.severity == dg.AssetCheckSeverity.WARN


def test_the_due_day_is_a_setting(instance, resources):
    assert "2026-11" not in {
        e.partition
        for e in tick(instance, resources, "2026-12-06T01:00:00Z", due_day=10).asset_events
    }


def test_a_month_with_a_run_in_flight_is_left_to_that_run(instance, resources):
    from report_pipeline.definitions import defs

    job = defs.get_job_def("extract_report_job")
    instance.create_run_for_job(
        job, tags={"dagster/partition": "2026-11"}, status=dg.DagsterRunStatus.STARTED
    )
    first = tick(instance, resources, "2026-12-06T01:00:00Z")
    assert "2026-11" not in {e.partition for e in first.asset_events}
    assert "2026-11" not in json.loads(first.cursor)["settled"]  # looked at again next tick

"""The sensor as the project defines it, and the run config intake passes to `stage_report`."""

import dagster as dg

from report_pipeline.definitions import defs
from report_pipeline.defs.reports.ops import stage_report_run_config


def test_the_sensor_runs_by_default_with_a_sensible_interval_and_a_description():
    sensor = defs.resolve_sensor_def("new_report_sensor")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == 30
    assert sensor.job_name == "extract_report_job"
    assert "the file whose content arrived last" in sensor.description
    assert "not the month's report are reported on the tick" in sensor.description


def test_stage_report_config_is_optional_and_intake_config_validates():
    job = defs.resolve_job_def("extract_report_job")
    config = {"source": "inbox", "report_key": "0" * 20, "source_hash": "0" * 64}
    for run_config in ({}, stage_report_run_config(config)):
        dg.validate_run_config(job, run_config)  # raises when the config is invalid

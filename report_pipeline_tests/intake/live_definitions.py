"""The test code location: the project's definitions with a 1-second sensor interval, for tests
that run a real daemon (the daemon's own loop still ticks every ~5 s), and with the storage fault
layer in front of the store when `REPORT_PIPELINE_STORAGE_FAULTS` is set where it loads
(devstack/faults.py). Everything else is the project's, unchanged."""

import dagster as dg

from devstack.faults import faults_from_environment
from report_pipeline import definitions
from report_pipeline.defs.reports.sensors import build_new_report_sensor


def _with_fast_sensor(project: dg.Definitions) -> dg.Definitions:
    fast = build_new_report_sensor(minimum_interval_seconds=1)
    return dg.Definitions(
        assets=project.assets,
        asset_checks=project.asset_checks,
        jobs=project.jobs,
        schedules=project.schedules,
        sensors=[fast if s.name == fast.name else s for s in project.sensors or []],
        resources=project.resources,
        executor=project.executor,
    )


defs = faults_from_environment(_with_fast_sensor(definitions.defs))

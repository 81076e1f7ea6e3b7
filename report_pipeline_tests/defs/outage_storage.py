"""Dagster's instance database failing under a step, at the storage boundary: a sqlite event log
that fails once to store one chosen step event of a run, with the error Postgres gives when it
restarts under a connection ("server closed the connection unexpectedly", raised by SQLAlchemy
as `OperationalError`). Everything else is Dagster's own sqlite storage.

Configured in a test instance's dagster.yaml (`instance_yaml`), as any event log storage is:
the step (a prefix of its key) and the event type come from the config, and a marker file under
`base_dir` makes it fail once per instance, whichever process writes the event (a run worker,
a step process)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy.exc
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._serdes import ConfigurableClassData

MARKER = "outage-struck"


class OutageEventLogStorage(SqliteEventLogStorage):
    def __init__(self, base_dir: str, step: str, event_type: str, inst_data=None):
        super().__init__(base_dir, inst_data=inst_data)
        self._step, self._event_type, self._marker = step, event_type, Path(base_dir, MARKER)

    @classmethod
    def config_type(cls) -> dict:
        return {"base_dir": str, "step": str, "event_type": str}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: dict):
        return cls(inst_data=inst_data, **config_value)

    def store_event(self, event) -> None:
        kind = event.dagster_event.event_type_value if event.dagster_event else None
        step = (event.step_key or "").rsplit(".", 1)[-1]  # the op, without the graph asset's name
        if kind == self._event_type and step.startswith(self._step) and not self._marker.exists():
            self._marker.write_text(f"{event.run_id} {step} {kind}\n")
            raise sqlalchemy.exc.OperationalError(
                "NOTIFY run_events", {}, Exception("server closed the connection unexpectedly")
            )
        super().store_event(event)


def instance_yaml(home: Path, step: str, event_type: str = "STEP_INPUT") -> str:
    """A dagster.yaml: sqlite storage under `home` whose event log fails once as above, and the
    project's run retries (dagster_home/dagster.yaml)."""
    return f"""telemetry:
  enabled: false
run_storage:
  module: dagster._core.storage.runs
  class: SqliteRunStorage
  config:
    base_dir: {home}/history
event_log_storage:
  module: report_pipeline_tests.defs.outage_storage
  class: OutageEventLogStorage
  config:
    base_dir: {home}/history/runs
    step: {step}
    event_type: {event_type}
schedule_storage:
  module: dagster._core.storage.schedules
  class: SqliteScheduleStorage
  config:
    base_dir: {home}/schedules
run_retries:
  enabled: true
  max_retries: 2
  retry_on_asset_or_op_failure: false
"""

"""`new_report_sensor` with poisoned months: a report that breaks inspection, or a source that
fails mid-read or cannot be listed, is reported on the tick; the other months still run."""

from __future__ import annotations

import io

import dagster as dg
import pytest

from report_pipeline.core import watch
from report_pipeline.core.intake import RefusedInput
from report_pipeline.core.s3_source import S3PrefixSource
from report_pipeline.core.submission import admit
from report_pipeline.core.worker import WorkerSettings
from report_pipeline.defs.resources import InboxResource
from report_pipeline.defs.sensors import new_report_sensor
from report_pipeline_tests.conftest import files_under, fixture_pdf
from report_pipeline_tests.intake.test_s3_source import FakeS3


class ResetBody(io.BytesIO):
    """A download whose connection drops after the first piece."""

    def read(self, size: int = -1) -> bytes:
        if self.tell():
            raise ConnectionResetError("connection reset by peer")
        return super().read(1024)


class FlakyS3(FakeS3):
    """The in-memory S3, whose downloads fail while `reads_fail` and listings while `down`."""

    reads_fail, down = True, False

    def list_objects_v2(self, **params):
        if self.down:
            raise ConnectionRefusedError("endpoint unreachable")
        return super().list_objects_v2(**params)

    def get_object(self, Bucket, Key):  # noqa: N803
        body = self.objects[Key]
        return {"Body": ResetBody(body) if self.reads_fail else io.BytesIO(body)}


CLOUD = FlakyS3({"team/2026-07/report.pdf": fixture_pdf("no_images.pdf").read_bytes()})


class InboxAndCloud(InboxResource):
    """The local inbox plus an S3 source backed by `CLOUD`."""

    def report_sources(self):
        return [*super().report_sources(), S3PrefixSource("cloud", "reports", "team", client=CLOUD)]


@pytest.fixture
def tick(instance, resources, tmp_path):
    """Evaluate the sensor like a daemon tick; `tick.sweep()` makes the next tick a full sweep."""
    CLOUD.reads_fail, CLOUD.down = True, False
    inbox = InboxAndCloud(root=str(tmp_path / "inbox"), settle_seconds=0)
    resources = {**resources, "inbox": inbox}
    state = {"cursor": None}

    def evaluate() -> dg.SensorResult:
        context = dg.build_sensor_context(instance, cursor=state["cursor"], resources=resources)
        result = new_report_sensor(context)
        state["cursor"] = result.cursor
        return result

    def sweep() -> None:
        cursor = watch.Cursor.loads(state["cursor"])
        cursor.swept_ns = 0
        state["cursor"] = cursor.dumps()

    evaluate.sweep = sweep
    return evaluate


def test_a_poisoned_month_is_refused_while_a_good_month_is_requested(tick, drop, capsys):
    drop("count_too_large.pdf", folder="2026-08")  # MuPDF raises on its page count
    drop("no_images.pdf", folder="2026-09")
    first = tick()
    assert [r.partition_key for r in first.run_requests] == ["2026-09"]
    logged = capsys.readouterr().err
    assert "inbox 2026-08: refused (page_count_mismatch)" in logged
    assert (
        "cloud 2026-07: refused (inspection_failed): report could not be read or inspected "
        "(ConnectionResetError)" in logged
    )
    assert tick().skip_reason.skip_message == "no new or changed reports"


def test_a_failed_read_is_tried_again_on_the_next_sweep_not_every_tick(tick, capsys):
    assert "refused (inspection_failed)" in tick().skip_reason.skip_message
    assert tick().skip_reason.skip_message == "no new or changed reports"
    CLOUD.reads_fail = False
    assert tick().skip_reason.skip_message == "no new or changed reports"
    tick.sweep()
    (request,) = tick().run_requests
    assert request.partition_key == "2026-07" and request.tags["report_pipeline/source"] == "cloud"


def test_a_source_that_cannot_be_listed_leaves_the_others_running(tick, drop, capsys):
    drop("no_images.pdf", folder="2026-09")
    CLOUD.down = True
    result = tick()
    assert [r.partition_key for r in result.run_requests] == ["2026-09"]
    assert "cloud: cannot be listed (ConnectionRefusedError)" in capsys.readouterr().err


def test_admission_turns_a_failed_download_into_a_refusal_and_keeps_nothing(tmp_path):
    source = S3PrefixSource("cloud", "reports", "team", client=FlakyS3(dict(CLOUD.objects)))
    (entry,) = source.entries("2026-07")
    settings = WorkerSettings(tmp_path / "work")
    with pytest.raises(RefusedInput) as caught:
        admit(source, entry.ref, "2026-07", settings, "intake/test")
    assert caught.value.code == "inspection_failed"
    assert isinstance(caught.value.__cause__, ConnectionResetError)
    assert files_under(tmp_path / "work") == []

"""`new_report_sensor` with poisoned months: a report that breaks inspection, or a source that
fails mid-read or cannot be listed, is reported on the tick; the other months still run."""

from __future__ import annotations

import dagster as dg
import pytest
from botocore.exceptions import EndpointConnectionError

from report_pipeline.core.intake import watch
from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.s3_source import S3PrefixSource
from report_pipeline.core.intake.submission import admit
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.storage.store import TransientStorageError
from report_pipeline.defs.deployment.resources import InboxResource
from report_pipeline.defs.reports.sensors import new_report_sensor
from report_pipeline_tests import s3 as s3_helpers
from report_pipeline_tests.conftest import files_under, fixture_pdf

pytestmark = pytest.mark.slow


class Faults:
    """Faults injected at the S3 boundary of one client: downloads reset while `reads_fail`,
    listings find no endpoint while `down`."""

    def __init__(self, client) -> None:
        self.reads_fail, self.down = True, False
        client.meta.events.register("after-call.s3.GetObject", self._read)
        client.meta.events.register("before-send.s3.ListObjectsV2", self._list)

    def _read(self, parsed, **_kwargs) -> None:
        if self.reads_fail:
            parsed["Body"] = s3_helpers.ResetBody(parsed["Body"])

    def _list(self, request, **_kwargs) -> None:
        if self.down:
            raise EndpointConnectionError(endpoint_url=request.url)


@pytest.fixture
def cloud(s3) -> S3PrefixSource:
    """An S3 source on the moto server holding one July report, with `cloud.faults`."""
    pdf = fixture_pdf("no_images.pdf").read_bytes()
    s3.client.put_object(Bucket=s3.bucket, Key="team/2026-07/report.pdf", Body=pdf)
    source = S3PrefixSource("cloud", s3.bucket, "team", s3_helpers.client(s3.endpoint, 1))
    source.faults = Faults(source.client)
    return source


@pytest.fixture
def tick(instance, resources, tmp_path, cloud):
    """Evaluate the sensor like a daemon tick; `tick.sweep()` makes the next tick a full sweep."""

    class InboxAndCloud(InboxResource):
        """The local inbox plus the S3 source."""

        def report_sources(self):
            return [*super().report_sources(), cloud]

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
    assert "inbox 2026-08/count_too_large.pdf: refused (page_count_mismatch)" in logged
    assert (
        "cloud 2026-07/report.pdf: refused (inspection_failed): report could not be read or "
        "inspected (TransientStorageError)" in logged
    )
    assert tick().skip_reason.skip_message == "no new or changed reports"


def test_a_failed_read_is_tried_again_on_the_next_sweep_not_every_tick(tick, cloud):
    assert "refused (inspection_failed)" in tick().skip_reason.skip_message
    assert tick().skip_reason.skip_message == "no new or changed reports"
    cloud.faults.reads_fail = False
    assert tick().skip_reason.skip_message == "no new or changed reports"
    tick.sweep()
    (request,) = tick().run_requests
    assert request.partition_key == "2026-07" and request.tags["report_pipeline/source"] == "cloud"


def test_a_source_that_cannot_be_listed_leaves_the_others_running(tick, cloud, drop, capsys):
    drop("no_images.pdf", folder="2026-09")
    cloud.faults.down = True
    result = tick()
    assert [r.partition_key for r in result.run_requests] == ["2026-09"]
    assert "cloud: cannot be listed (TransientStorageError)" in capsys.readouterr().err


def test_admission_turns_a_failed_download_into_a_refusal_and_keeps_nothing(cloud, tmp_path):
    (entry,) = cloud.entries("2026-07")
    settings = PipelineSettings(tmp_path / "work")
    with pytest.raises(RefusedInput) as caught:
        admit(cloud, entry.ref, "2026-07", settings, "intake/test")
    assert caught.value.code == "inspection_failed"
    assert isinstance(caught.value.__cause__, TransientStorageError)  # a reset mid-download
    assert files_under(tmp_path / "work") == []

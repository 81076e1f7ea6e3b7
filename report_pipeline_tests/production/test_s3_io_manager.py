"""The production IO manager (defs/deployment/s3_io_manager.py) on moto's S3 server: every
output is in the bucket, as S3PickleIOManager writes it; the process that wrote an op output
loads it without a GET; an asset's output, another process's and an earlier run's are read. A
step's outputs yielded inside `op_outputs.uploaded_together` are uploaded side by side, all
stored before the step succeeds."""

from __future__ import annotations

import time
from collections import Counter
from urllib.parse import urlsplit

import dagster as dg
import pytest
from dagster_aws.s3 import S3Resource

from devstack import latency_proxy
from report_pipeline.defs.deployment import op_outputs
from report_pipeline.defs.deployment.op_outputs import uploaded_together
from report_pipeline.defs.deployment.s3_io_manager import RunLocalS3PickleIOManager

pytestmark = pytest.mark.live


def manager(s3) -> tuple[RunLocalS3PickleIOManager, Counter]:
    resource = S3Resource(endpoint_url=s3.endpoint, region_name="us-east-1")
    made = RunLocalS3PickleIOManager(s3_resource=resource, s3_bucket=s3.bucket, s3_prefix="io")
    calls: Counter = Counter()
    made.inner_io_manager().s3.meta.events.register(
        "before-call.s3", lambda model, **kw: calls.update([model.name])
    )
    return made, calls


def output(run_id: str, step: str, asset: str = "") -> dg.OutputContext:
    key = dg.AssetKey(asset) if asset else None
    return dg.build_output_context(run_id=run_id, step_key=step, name="result", asset_key=key)


def test_a_process_loads_its_own_op_outputs_without_a_get_and_others_read_the_bucket(s3):
    writer, calls = manager(s3)
    staged = output("run-1", "stage_report")
    writer.handle_output(staged, {"pages": 3})
    assert calls["PutObject"] == 1  # still uploaded: a re-execution reads it from there
    assert writer.load_input(dg.build_input_context(upstream_output=staged)) == {"pages": 3}
    assert calls["GetObject"] == 0

    reader, read_calls = manager(s3)  # another process: the bucket's object
    assert reader.load_input(dg.build_input_context(upstream_output=staged)) == {"pages": 3}
    assert read_calls["GetObject"] == 1


def test_an_asset_output_and_an_earlier_runs_output_are_read_from_the_bucket(s3):
    writer, calls = manager(s3)
    table = output("run-1", "manifest_table", asset="manifest_table")
    writer.handle_output(table, [1, 2])
    loaded = dg.build_input_context(upstream_output=table, asset_key=dg.AssetKey("manifest_table"))
    assert writer.load_input(loaded) == [1, 2] and calls["GetObject"] == 1

    first = output("run-1", "stage_report")
    writer.handle_output(first, "one")
    writer.handle_output(output("run-2", "stage_report"), "two")  # a new run: copies dropped
    assert writer.load_input(dg.build_input_context(upstream_output=first)) == "one"
    assert calls["GetObject"] == 2


def two_outputs_job(resource: S3Resource, bucket: str) -> dg.JobDefinition:
    """An op yielding two outputs inside `uploaded_together`, and one that loads both."""

    @dg.op(out={"first": dg.Out(), "second": dg.DynamicOut()})
    def produce(context):  # (no annotation: this module's annotations are strings)
        with uploaded_together(context):
            yield dg.Output("one", "first")
            yield dg.DynamicOutput("two", mapping_key="k", output_name="second")
        assert op_outputs.open_steps() == 0

    @dg.op
    def consume(first: str, second: str) -> str:
        return first + second

    @dg.job(resource_defs={"io_manager": RunLocalS3PickleIOManager(
        s3_resource=resource, s3_bucket=bucket, s3_prefix="io")})  # fmt: skip
    def job():
        first, second = produce()
        second.map(lambda s: consume(first, s))

    return job


def test_outputs_uploaded_together_are_stored_before_the_step_succeeds_in_one_wait(s3):
    with latency_proxy.latency_proxy(urlsplit(s3.endpoint).port, 0.2) as proxy:
        resource = S3Resource(endpoint_url=proxy.endpoint, region_name="us-east-1")
        with dg.DagsterInstance.ephemeral() as instance:
            result = two_outputs_job(resource, s3.bucket).execute_in_process(instance=instance)
            kind = dg.DagsterEventType.STEP_SUCCESS
            (success,) = [e for e in instance.all_logs(result.run_id, of_type=kind)
                          if e.step_key == "produce"]  # fmt: skip
        trips = proxy.take_trips()
    assert result.success and result.output_for_node("consume")["k"] == "onetwo"
    puts = [t for t in trips if t.first_line.startswith("PUT") and "/produce/" in t.first_line]
    # both stored, side by side (200 ms a trip: Dagster's events between the two outputs take
    # far less), and before the step's success: its downstream step ran after both ended
    assert len(puts) == 2 and latency_proxy.waves(puts) == 1
    keys = {o["Key"] for o in s3.client.list_objects_v2(Bucket=s3.bucket)["Contents"]}
    assert any(k.endswith("produce/first") for k in keys), keys
    assert any(k.endswith("produce/second/k") for k in keys), keys
    offset = time.time() - time.monotonic()  # the trips' clock (the system's monotonic one)
    assert success.timestamp >= max(t.ended for t in puts) + offset


def test_a_failed_upload_fails_the_step_inside_the_op(s3):
    resource = S3Resource(endpoint_url=s3.endpoint, region_name="us-east-1")
    result = two_outputs_job(resource, "no-such-bucket").execute_in_process(raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "produce" and "NoSuchBucket" in str(failure.event_specific_data)
    assert op_outputs.open_steps() == 0

"""The production IO manager (defs/deployment/s3_io_manager.py) on moto's S3 server: every
output is in the bucket, as S3PickleIOManager writes it; the process that wrote an op output
loads it without a GET; an asset's output, another process's and an earlier run's are read."""

from __future__ import annotations

from collections import Counter

import dagster as dg
import pytest
from dagster_aws.s3 import S3Resource

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

"""The Dagster side on S3 (moto server, sqlite instance): the store resource built from the
environment by `production_store_resource()`, and a sensor-requested run that reads its report
from an S3 source and archives it into the S3 store, with ops unchanged."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from report_pipeline.defs.deployment.resources import InboxResource, SourceSpec
from report_pipeline.defs.deployment.s3_resources import (
    S3StoreResource,
    production_store_resource,
)
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.manifest_table import manifest_table
from report_pipeline.defs.reports.sensors import new_report_sensor
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow


@pytest.fixture
def s3_env(s3, monkeypatch):
    monkeypatch.setenv("REPORT_PIPELINE_S3_BUCKET", s3.bucket)
    monkeypatch.setenv("REPORT_PIPELINE_S3_PREFIX", "pipeline")
    monkeypatch.setenv("REPORT_PIPELINE_S3_ENDPOINT", s3.endpoint)
    return s3


def test_production_store_resource_is_configured_from_the_environment(s3_env):
    resource = production_store_resource()
    assert isinstance(resource, S3StoreResource)  # a StoreResource: ops take it unchanged
    with dg.build_resources({"store": resource}) as built:
        store = built.store.get_store()
        store.put_bytes("archive/r/rev/manifest.json", b"{}")
        assert built.store.get_store() is store  # one client per process
    head = s3_env.client.head_object(
        Bucket=s3_env.bucket, Key="pipeline/archive/r/rev/manifest.json"
    )
    assert head["ServerSideEncryption"] == "AES256"


def test_a_sensor_run_from_an_s3_source_archives_into_the_s3_store(
    s3_env, instance, resources, tmp_path
):
    s3 = s3_env
    pdf = fixture_pdf("repeated_image.pdf").read_bytes()
    s3.client.put_object(Bucket=s3.bucket, Key="reports/2026-09/board.pdf", Body=pdf)
    cloud = SourceSpec(name="cloud", bucket=s3.bucket, prefix="reports")
    resources = {
        **resources,
        "inbox": InboxResource(
            root=str(tmp_path / "inbox"), settle_seconds=0, extra_sources=[cloud]
        ),
        "store": production_store_resource(),
    }
    defs = dg.Definitions(
        assets=[report_manifest, manifest_table], jobs=[extract_report_job],
        sensors=[new_report_sensor], resources=resources,
    )  # fmt: skip
    with dg.build_sensor_context(instance=instance, resources=resources) as context:
        (request,) = new_report_sensor(context).run_requests  # nested S3Resource: a with block
    assert request.tags["report_pipeline/source"] == "cloud"
    result = defs.resolve_job_def("extract_report_job").execute_in_process(
        run_config=request.run_config, instance=instance, partition_key=request.partition_key,
        tags={**request.tags, "dagster/run_key": request.run_key},
    )  # fmt: skip
    assert result.success
    keys = [o["Key"] for o in s3.client.list_objects_v2(Bucket=s3.bucket)["Contents"]]
    (manifest_key,) = [k for k in keys if k.endswith("/manifest.json")]
    assert manifest_key.startswith("pipeline/archive/cloud-2026-09/")
    manifest = json.loads(s3.client.get_object(Bucket=s3.bucket, Key=manifest_key)["Body"].read())
    assert manifest["state"] == "complete" and manifest["children"]
    assert not any(k.startswith("pipeline/staged/") for k in keys)  # the short clock's material
    for key in keys:
        if key.startswith("pipeline/"):
            head = s3.client.head_object(Bucket=s3.bucket, Key=key)
            assert head["ServerSideEncryption"] == "AES256", key

"""REPORT_PIPELINE_DEPLOYMENT chooses the resources when the definitions load; the embedded
default is unchanged; production's S3 store, S3 inbox and S3 IO manager build from the
environment alone."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import pytest
from botocore.loaders import JSONFileLoader
from dagster_aws.s3 import S3PickleIOManager

from report_pipeline.defs import deployment as chosen
from report_pipeline.defs.resources import InboxResource, StoreResource
from report_pipeline.defs.s3_resources import (
    S3ClientResource,
    S3InboxResource,
    S3StoreResource,
    production_inbox_resource,
)

PROBE = """import os
from report_pipeline.definitions import defs
print(os.environ.get("REPORT_PIPELINE_DEPLOYMENT") or "-", *sorted(defs.resources))"""


def test_the_environment_chooses_the_deployment_when_the_definitions_load():
    names = {}
    for value in ("", "local", "production"):
        env = {"PATH": "/usr/bin:/bin", "REPORT_PIPELINE_DEPLOYMENT": value}
        out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
        names[value] = out.stdout.split()[1:]
    assert names[""] == names["local"] == ["checks", "clock", "inbox", "settings", "store"]
    assert names["production"] == ["checks", "clock", "inbox", "io_manager", "settings", "store"]


def test_an_unknown_deployment_stops_the_load_with_its_name(monkeypatch):
    monkeypatch.setenv("REPORT_PIPELINE_DEPLOYMENT", "prod")
    with pytest.raises(ValueError, match="REPORT_PIPELINE_DEPLOYMENT='prod'"):
        chosen.deployment()


def test_the_embedded_default_keeps_the_local_store_and_dagsters_io_manager():
    resources = chosen.resources_for(chosen.LOCAL)
    assert isinstance(resources["store"], StoreResource) and "io_manager" not in resources


def test_production_wires_the_s3_store_inbox_and_io_manager(monkeypatch):
    monkeypatch.setenv("REPORT_PIPELINE_INBOX_BUCKET", "reports-in")
    resources = chosen.resources_for(chosen.PRODUCTION)
    assert isinstance(resources["store"], S3StoreResource)
    assert isinstance(resources["inbox"], S3InboxResource)
    assert resources["inbox"].bucket == dg.EnvVar("REPORT_PIPELINE_INBOX_BUCKET")
    assert isinstance(resources["io_manager"], S3PickleIOManager)
    monkeypatch.delenv("REPORT_PIPELINE_INBOX_BUCKET")
    assert type(chosen.resources_for(chosen.PRODUCTION)["inbox"]) is InboxResource


def test_the_s3_inbox_lists_its_bucket_and_prefix(backend):
    backend.drop("no_images.pdf", "2026-03")
    with dg.build_resources(
        {"inbox": production_inbox_resource(chosen.local_resources()["inbox"])}
    ) as built:
        (source,) = built.inbox.report_sources()
        assert source.name == "inbox" and source.months() == [("2026-03", 0)]
        assert [e.ref.rel for e in built.inbox.source().entries("2026-03")] == [
            "2026-03/report.pdf"
        ]


def test_the_s3_io_manager_reads_its_bucket_from_the_environment_at_run_time():
    (manager,) = chosen.s3_io_manager().values()
    assert isinstance(manager, S3PickleIOManager)
    assert manager.s3_bucket == dg.EnvVar("REPORT_PIPELINE_S3_BUCKET")
    assert manager.s3_resource.endpoint_url is None  # boto3 reads AWS_ENDPOINT_URL itself


def test_s3_clients_share_parsed_models_but_read_credentials_each(s3, monkeypatch):
    """Every S3 client of a run (store, report source, IO manager) comes from an S3Resource
    whose sessions share botocore's parsed service models: after the first, a client costs
    milliseconds, not a tenth of a second. Each still resolves its own credentials."""
    resource = S3ClientResource(endpoint_url=s3.endpoint, region_name="us-east-1", max_attempts=2)
    first = resource.get_client()
    parsed = []
    original = JSONFileLoader.load_file
    monkeypatch.setattr(
        JSONFileLoader, "load_file", lambda self, path: parsed.append(path) or original(self, path)
    )
    second = resource.get_client()
    assert parsed == []  # no model file read again (a fresh session parses ~0.1-0.3 s of them)
    assert first is not second and second.meta.config.retries["total_max_attempts"] == 3
    assert hasattr(second, "upload_fileobj")  # boto3's methods, as the IO manager needs
    second.put_object(Bucket=s3.bucket, Key="probe", Body=b"x", ServerSideEncryption="AES256")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "rotated")
    rotated = resource.get_client()
    assert rotated.meta.region_name == "us-east-1"
    assert rotated._request_signer._credentials.access_key == "rotated"  # noqa: SLF001
    assert first._request_signer._credentials.access_key != "rotated"  # noqa: SLF001
    assert isinstance(chosen.s3_io_manager()["io_manager"].s3_resource, S3ClientResource)

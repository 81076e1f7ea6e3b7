"""REPORT_PIPELINE_DEPLOYMENT chooses the resources when the definitions load, and
REPORT_PIPELINE_EXECUTOR the executor (Celery only in production); the embedded default is
unchanged; production's S3 store, S3 inbox and S3 IO manager build from the environment alone."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import pytest
from botocore.loaders import JSONFileLoader
from dagster_aws.s3 import S3PickleIOManager

from report_pipeline.defs.deployment import deployment as chosen
from report_pipeline.defs.deployment.io_manager import LocalIOManager
from report_pipeline.defs.deployment.resources import InboxResource, StoreResource
from report_pipeline.defs.deployment.s3_resources import (
    S3ClientResource,
    S3InboxResource,
    S3StoreResource,
    production_inbox_resource,
)

pytestmark = pytest.mark.live

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
    assert names[""] == names["local"] == ["checks", "clock", "inbox", "io_manager", "settings",
                                           "store"]  # fmt: skip
    assert names["production"] == ["checks", "clock", "inbox", "io_manager", "settings", "store"]


def test_an_unknown_deployment_stops_the_load_with_its_name(monkeypatch):
    monkeypatch.setenv("REPORT_PIPELINE_DEPLOYMENT", "prod")
    with pytest.raises(ValueError, match="REPORT_PIPELINE_DEPLOYMENT='prod'"):
        chosen.deployment()


def test_the_embedded_default_keeps_the_local_store_and_dagsters_io_manager_layout():
    resources = chosen.resources_for(chosen.LOCAL)
    assert isinstance(resources["store"], StoreResource)
    assert isinstance(resources["io_manager"], LocalIOManager)  # paths shown relative


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


EXECUTOR_PROBE = """import dagster as dg
from report_pipeline.definitions import defs
job = defs.resolve_job_def("extract_report_job")
config = dg.validate_run_config(job)["execution"]  # launched with no executor config
print(defs.executor.name, job.executor_def.name, config.get("celery", {}).get("broker", "-"))"""


def _load(env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", **env}
    return subprocess.run(
        [sys.executable, "-c", EXECUTOR_PROBE], env=env, capture_output=True, text=True
    )


def test_the_environment_chooses_the_executor_when_the_definitions_load():
    for value in ("", "in_process"):
        done = _load({"REPORT_PIPELINE_EXECUTOR": value})
        assert done.stdout.split()[:2] == ["in_process", "in_process"], done.stderr[-2000:]
    production = {"REPORT_PIPELINE_DEPLOYMENT": "production", "REPORT_PIPELINE_S3_BUCKET": "b"}
    done = _load({"REPORT_PIPELINE_EXECUTOR": "celery", **production})
    assert done.stdout.split() == ["celery", "celery", "redis://127.0.0.1:6379/0"], done.stderr


def test_celery_without_the_production_deployment_stops_the_load_with_the_reason():
    for deployment in ("", "local"):
        env = {"REPORT_PIPELINE_EXECUTOR": "celery", "REPORT_PIPELINE_DEPLOYMENT": deployment}
        done = _load(env)
        assert done.returncode != 0
        assert "REPORT_PIPELINE_EXECUTOR=celery needs REPORT_PIPELINE_DEPLOYMENT=production" in (
            done.stderr
        ), done.stderr[-2000:]
    done = _load({"REPORT_PIPELINE_EXECUTOR": "multiprocess"})
    assert "REPORT_PIPELINE_EXECUTOR='multiprocess'" in done.stderr, done.stderr[-2000:]


def test_the_celery_executor_config_resolves_from_the_environment(monkeypatch):
    """Broker and backend name their variables when set (each process reads its own value; the
    UI never shows a password in the URL), else the loopback Redis; late acknowledgement,
    requeue of a lost worker's step, one step per worker, and a visibility timeout longer than
    any run may last."""
    from report_pipeline.defs.deployment import celery_executor as celery

    for name in (celery.BROKER_ENV, celery.BACKEND_ENV, celery.VISIBILITY_ENV):
        monkeypatch.delenv(name, raising=False)
    config = celery.executor_config()
    assert config["broker"] == "redis://127.0.0.1:6379/0"
    assert config["backend"] == "redis://127.0.0.1:6379/1"
    source = config["config_source"]
    assert source["task_acks_late"] and source["task_reject_on_worker_lost"]
    assert source["worker_prefetch_multiplier"] == 1
    transport = source["broker_transport_options"]
    assert transport["visibility_timeout"] > 3600 + 30  # max_runtime_seconds + monitoring poll
    assert transport["unacked_restore_throttle"] == 1

    monkeypatch.setenv(celery.BROKER_ENV, "redis://:secret@redis.internal:6379/0")
    monkeypatch.setenv(celery.BACKEND_ENV, "redis://:secret@redis.internal:6379/1")
    monkeypatch.setenv(celery.VISIBILITY_ENV, "40")
    config = celery.executor_config()
    assert config["broker"] == {"env": celery.BROKER_ENV}
    assert config["backend"] == {"env": celery.BACKEND_ENV}
    assert config["config_source"]["broker_transport_options"]["unacked_restore_interval"] == 4
    job = dg.define_asset_job("j", selection=[_noop])
    defs = dg.Definitions(assets=[_noop], jobs=[job], executor=celery.celery_executor())
    # what the run's executor is built with, in this process's environment
    resolved = dg.validate_run_config(defs.resolve_job_def("j"))["execution"]["celery"]
    assert resolved["broker"] == "redis://:secret@redis.internal:6379/0"
    assert resolved["config_source"]["broker_transport_options"]["visibility_timeout"] == 40
    args = celery.worker_app_args()  # the worker's app: the same settings, its own values
    assert args["broker"] == resolved["broker"] and args["backend"] == resolved["backend"]
    assert args["config_source"] == resolved["config_source"]
    from dagster_celery import core_execution_loop
    from dagster_celery.version import __version__

    assert __version__ == "0.29.27"  # the loop whose TICK_SECONDS celery_executor() sets
    assert core_execution_loop.TICK_SECONDS == celery.POLL_SECONDS == 0.2
    monkeypatch.setenv(celery.VISIBILITY_ENV, "soon")
    with pytest.raises(ValueError, match="REPORT_PIPELINE_CELERY_VISIBILITY_TIMEOUT"):
        celery.config_source()


@dg.asset
def _noop() -> None:
    return None


def test_a_celery_worker_refuses_to_start_where_a_step_could_not_run(tmp_path):
    """Before it connects to any broker: a worker without its own DAGSTER_HOME, outside the
    production deployment, or told to serve another executor stops with the reason."""
    base = {"PATH": "/usr/bin:/bin", "DAGSTER_HOME": str(tmp_path)}
    cases = [
        ({"PATH": "/usr/bin:/bin"}, "DAGSTER_HOME is not set"),
        (base, "REPORT_PIPELINE_EXECUTOR=celery needs REPORT_PIPELINE_DEPLOYMENT=production"),
        ({**base, "REPORT_PIPELINE_DEPLOYMENT": "production",
          "REPORT_PIPELINE_EXECUTOR": "in_process"}, "serves the celery executor"),
    ]  # fmt: skip
    for env, reason in cases:
        done = subprocess.run(
            [sys.executable, "-m", "report_pipeline.celery_worker", "--name", "w"],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode != 0 and reason in done.stderr, (env, done.stderr[-2000:])

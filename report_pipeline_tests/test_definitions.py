"""The definitions load, and every name other tools and people rely on resolves."""

import dagster as dg
import pytest

from report_pipeline.definitions import defs

pytestmark = pytest.mark.slow


def test_definitions_load_and_the_named_objects_resolve():
    dg.Definitions.validate_loadable(defs)
    job = defs.resolve_job_def("extract_report_job")
    assert job.partitions_def is not None
    assert job.executor_def.name == "in_process"
    asset = defs.resolve_assets_def("report_manifest")
    assert asset.partitions_def.get_partition_keys()[:2] == ["2025-01", "2025-02"]
    assert asset.descriptions_by_key[dg.AssetKey("report_manifest")]
    table = defs.resolve_assets_def("manifest_table")
    assert table.partitions_def == asset.partitions_def
    assert {k.to_user_string() for k in job.asset_layer.asset_graph.materializable_asset_keys} >= {
        "report_manifest", "manifest_table"
    }  # fmt: skip
    archive = defs.resolve_assets_def("image_archive")
    assert archive.partitions_def is None and archive.op.description


def test_the_first_month_is_a_setting_read_when_the_definitions_load():
    import subprocess
    import sys

    code = "from report_pipeline.defs.deployment.partitions import monthly_partitions as p;"
    code += "print(p.get_partition_keys()[0])"
    env = {"REPORT_PIPELINE_FIRST_MONTH": "2026-07", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "2026-07", out.stderr


def test_retention_jobs_schedules_and_checks_resolve_by_name():
    assert defs.resolve_job_def("cleanup_job").executor_def.name == "in_process"
    audit = defs.resolve_job_def("retention_audit_job")
    checks = {key.to_user_string() for key in audit.asset_layer.asset_graph.asset_check_keys}
    assert checks == {"image_archive:work_material_deleted_by_deadline",
                      "image_archive:archive_within_retention"}  # fmt: skip
    month = defs.resolve_job_def("extract_report_job").asset_layer.asset_graph.asset_check_keys
    assert {key.to_user_string() for key in month} == {
        f"report_manifest:{name}" for name in ("manifest_complete", "archive_matches_manifest",
            "first_attempt_validation", "quarantine_rate", "queue_age_p95",
            "report_archived_on_time", "quarantine_reviewed", "pages_drawn_whole")
    }  # fmt: skip
    for name in ("cleanup_schedule", "retention_audit_schedule"):
        assert defs.resolve_schedule_def(name).description
    for name in ("overdue_report_sensor", "quarantine_review_sensor"):
        assert defs.resolve_sensor_def(name).description
    assert defs.resolve_job_def("quarantine_review_job").description


def test_every_job_runs_on_the_one_executor_set_on_the_definitions():
    from report_pipeline.defs.deployment.deployment import EXECUTOR
    from report_pipeline.defs.reports import jobs as reports
    from report_pipeline.defs.retention import jobs as retention

    own = [reports.extract_report_job, retention.cleanup_job, retention.retention_audit_job]
    assert [job.executor_def for job in own] == [None] * 3  # set nowhere else: inherited
    assert defs.executor is EXECUTOR  # REPORT_PIPELINE_EXECUTOR unset: in-process
    resolved = {job.name: job.executor_def for job in defs.resolve_all_job_defs()}
    assert {job.name for job in own} <= set(resolved)
    assert all(executor is EXECUTOR for executor in resolved.values()), resolved
    assert EXECUTOR.name == "in_process"


def test_every_op_has_a_description_for_the_ui():
    asset = defs.resolve_assets_def("report_manifest")
    ops = {node.definition.name: node.definition for node in asset.node_def.node_dict.values()}
    assert set(ops) == {"stage_report", "extract_pages", "archive_pages", "publish_manifest"}
    assert all(op.description for op in ops.values())
    retried = {name for name, op in ops.items() if op.retry_policy is not None}
    assert retried == set(ops)  # every op does storage I/O; only storage errors retry


def test_workspace_file_points_at_the_definitions():
    import yaml

    from report_pipeline_tests.conftest import FIXTURES

    workspace = yaml.safe_load((FIXTURES.parent.parent / "workspace.yaml").read_text())
    assert (
        workspace["load_from"][0]["python_module"]["module_name"] == "report_pipeline.definitions"
    )


@pytest.fixture(scope="module")
def fresh_load() -> dict:
    """What a fresh Python sees once it has loaded the definitions (one process for the tests
    below: each such process takes ~2 s of CPU)."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import gc, json, sys; import report_pipeline.definitions;"
        "pandas = 'pandas' in sys.modules;"
        "top = {m.split('.')[0] for m in sys.modules};"
        "s3 = sorted(top & {'botocore', 'boto3', 'dagster_aws'});"
        "frozen = gc.get_freeze_count();"
        "after = [[] for _ in range(1000)];"
        "print(json.dumps({'pandas': pandas, 's3': s3, 'frozen': frozen,"
        " 'unfrozen': len(gc.get_objects()),"
        " 'unchanged': gc.get_freeze_count() == frozen}))"
    )
    env = {k: v for k, v in os.environ.items() if k != "REPORT_PIPELINE_DEPLOYMENT"}  # embedded
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(done.stdout)


def test_the_loaded_code_location_is_frozen_for_the_garbage_collector(fresh_load):
    """A run worker loads the definitions and keeps them: frozen, the collector's full passes
    during a run leave them alone (bench.cold: 0.21 s of collecting in a cold run instead of
    0.37 s). Nothing the process makes afterwards is frozen."""
    frozen, unfrozen = fresh_load["frozen"], fresh_load["unfrozen"]
    assert frozen > 100_000  # the loaded code: Dagster, the definitions, their imports
    assert 1000 <= unfrozen < 10_000 and fresh_load["unchanged"]  # only what came after


def test_loading_the_definitions_does_not_import_pandas(fresh_load):
    """pandas is imported by the step that builds the manifest table (core/archive/table.py),
    not by every code server, sensor tick, CLI call and run worker that loads the definitions."""
    assert fresh_load["pandas"] is False


def test_the_embedded_default_loads_no_s3_client_library(fresh_load):
    """Every run worker, code server and CLI call loads the definitions: on the embedded default
    they import no botocore, boto3 or dagster_aws (the production deployment's, imported where
    its resources are built; Dagster's sqlite instance imports none of them either)."""
    assert fresh_load["s3"] == []

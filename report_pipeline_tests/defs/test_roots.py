"""The roots (inbox, store, work: where things live) are wired with dg.EnvVar where the
definitions build their resources (defs/deployment/deployment.py), and no run config moves
them silently.

Dagster applies a resource's run config to the whole resource: fields the run config leaves
out take the class defaults, not the values the resource was built with. The roots have no
class default, so resource run config without them is refused before the run starts; per-run
task sizing is stage_report's op config, which touches no resource. Every run here goes through
`build_defs("local")`'s job in an empty working directory, so anything written to the embedded
defaults (var/...) would show up there."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from report_pipeline.definitions import build_defs
from report_pipeline.defs.deployment import deployment
from report_pipeline.defs.deployment.resources import PipelineSettingsResource, StoreResource
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow

ENV = {"inbox": "REPORT_PIPELINE_INBOX", "store": "REPORT_PIPELINE_STORE",
       "work": "REPORT_PIPELINE_WORK"}  # fmt: skip
MONTH = "2026-10"
RESOURCE_KNOB = {"resources": {"settings": {"config": {"pages_per_task": 20}}}}


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch) -> Path:
    """An empty working directory (the embedded defaults are relative to it); no root set."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    for variable in ENV.values():
        monkeypatch.delenv(variable, raising=False)
    return folder


@pytest.fixture
def roots(cwd: Path, tmp_path: Path, monkeypatch) -> dict[str, Path]:
    """REPORT_PIPELINE_INBOX/STORE/WORK set to folders outside the working directory, with the
    month's report in the inbox."""
    roots = {name: tmp_path / f"env-{name}" for name in ENV}
    for name, variable in ENV.items():
        monkeypatch.setenv(variable, str(roots[name]))
    drop(roots["inbox"])
    return roots


def drop(inbox: Path) -> None:
    """3 pages; where the month's report is archived, not what it holds, is the question."""
    (inbox / MONTH).mkdir(parents=True)
    shutil.copyfile(fixture_pdf("no_images.pdf"), inbox / MONTH / "report.pdf")


def run(instance, run_config: dict | None = None) -> dg.ExecuteInProcessResult:
    """The month, through the project's definitions, loaded now (the roots are wired now)."""
    job = build_defs(deployment.LOCAL).resolve_job_def("extract_report_job")
    return job.execute_in_process(
        partition_key=MONTH, instance=instance, run_config=run_config or {}, raise_on_error=False
    )


def assert_ran_under(result: dg.ExecuteInProcessResult, store: Path, work: Path) -> None:
    """The run archived into `store` and its steps worked under `work`: every workdir is gone,
    its hour bucket stays."""
    assert result.success
    assert len(list((store / "archive").rglob("manifest.json"))) == 1
    assert [p.name for p in work.iterdir() if p.is_dir()], "no workdir was made under the root"


def test_set_roots_are_wired_as_env_vars_when_the_definitions_load(roots):
    resources = deployment.local_resources()
    assert resources["inbox"].root == dg.EnvVar(ENV["inbox"])
    assert resources["store"].root == dg.EnvVar(ENV["store"])
    assert resources["settings"].work_root == dg.EnvVar(ENV["work"])


def test_a_run_without_run_config_uses_the_set_roots(roots, cwd, instance):
    assert_ran_under(run(instance), roots["store"], roots["work"])
    assert list(cwd.iterdir()) == []  # nothing in var/inbox, var/store or var/work


def test_a_run_sizing_its_tasks_in_the_launchpad_keeps_the_set_roots(roots, cwd, instance):
    result = run(instance, stage_report_run_config({"pages_per_task": 1}))
    assert_ran_under(result, roots["store"], roots["work"])
    assert len(result.get_step_success_events()) > 2 * 3  # one extract + archive step per page
    assert list(cwd.iterdir()) == []


def test_resource_run_config_without_the_root_is_refused_before_the_run(roots, cwd, instance):
    """What the live crash test used to send: without refusal its work root would be the
    class default, silently."""
    with pytest.raises(dg.DagsterInvalidConfigError, match='"work_root"'):
        run(instance, RESOURCE_KNOB)
    assert list(cwd.iterdir()) == [] and not roots["work"].exists()
    assert not instance.get_runs()


def test_a_root_named_in_run_config_is_honoured(roots, cwd, tmp_path, instance):
    chosen = tmp_path / "chosen-work"
    settings = {"work_root": str(chosen), "pages_per_task": 20}
    result = run(instance, {"resources": {"settings": {"config": settings}}})
    assert_ran_under(result, roots["store"], chosen)
    assert not roots["work"].exists() and list(cwd.iterdir()) == []


def test_a_root_set_at_load_and_gone_at_run_time_fails_the_run_never_falls_back(
    roots, cwd, instance, monkeypatch
):
    job = build_defs(deployment.LOCAL).resolve_job_def("extract_report_job")
    monkeypatch.delenv(ENV["work"])
    with pytest.raises(dg.DagsterInvalidConfigError, match=ENV["work"]):
        job.execute_in_process(partition_key=MONTH, instance=instance)
    assert list(cwd.iterdir()) == []


def test_with_nothing_set_the_embedded_defaults_apply(cwd, instance):
    resources = deployment.local_resources()
    assert resources["settings"].work_root == "var/work"
    assert not isinstance(resources["settings"].work_root, dg.EnvVar)
    drop(cwd / "var" / "inbox")
    assert_ran_under(run(instance), cwd / "var" / "store", cwd / "var" / "work")


def test_a_root_is_never_the_variables_name_nor_the_working_directory(monkeypatch, tmp_path):
    """Used without Dagster building it, an EnvVar-wired resource holds the variable's name."""
    monkeypatch.setenv(ENV["work"], str(tmp_path))
    with pytest.raises(ValueError, match="not resolved yet"):
        PipelineSettingsResource(work_root=dg.EnvVar(ENV["work"])).settings()
    with pytest.raises(ValueError, match="store.root is empty"):
        StoreResource(root="").get_store()
    monkeypatch.setenv(ENV["store"], "")  # set but empty at run time
    empty = StoreResource(root=dg.EnvVar(ENV["store"]))
    with (
        dg.build_resources({"store": empty}) as built,
        pytest.raises(ValueError, match="store.root is empty"),
    ):
        built.store.get_store()

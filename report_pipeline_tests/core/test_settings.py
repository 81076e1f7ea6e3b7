"""The model, the retention side, the checks and the archive stay light: no PDF stack behind the
clocks or the manifest."""

import subprocess
import sys
from pathlib import Path

import pytest

from report_pipeline.core.model.settings import PipelineSettings, RetentionPolicy, TaskSizing

PDF_STACK = ("pymupdf", "PIL", "magic")
CORE = Path(__file__).resolve().parents[2] / "report_pipeline" / "core"
# Every module of the folders below the worker and beside it: what the janitor, the checks and
# publishing import.
RETENTION_SIDE = sorted(
    f"{folder}.{p.stem}"
    for folder in ("retention", "storage", "model", "scratch", "checks", "archive")
    for p in (CORE / folder).glob("*.py")
)


def loaded_after_import(*modules: str) -> set[str]:
    """Top-level packages in sys.modules after importing `modules` in a fresh interpreter."""
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules)
    code += "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


@pytest.mark.slow
def test_the_retention_side_imports_no_pdf_stack():
    assert len(RETENTION_SIDE) >= 10
    modules = [f"report_pipeline.core.{name}" for name in RETENTION_SIDE]
    assert not loaded_after_import(*modules) & set(PDF_STACK)


@pytest.mark.slow
def test_the_settings_module_imports_no_pdf_stack():
    assert not loaded_after_import("report_pipeline.core.model.settings") & set(PDF_STACK)


def test_the_embedded_defaults_need_no_configuration(tmp_path):
    settings = PipelineSettings(tmp_path)
    assert settings.limits.max_pages == 2000
    assert settings.retention == RetentionPolicy(15, 400, 60)
    assert TaskSizing() == TaskSizing(pages_per_task=0, target_units=400.0)


@pytest.mark.parametrize("field", ["work_minutes", "archive_days", "lease_minutes"])
def test_a_clock_that_is_not_positive_is_refused(field):
    with pytest.raises(ValueError, match="positive"):
        RetentionPolicy(**{field: 0})


def test_every_setting_of_the_resource_is_in_the_readme_with_the_cores_default():
    """A setting lives in three places (docs/develop.md): the core's dataclass, the resource's
    field (whose default is the dataclass's) and the README's Configure table."""
    from report_pipeline.defs.deployment.resources import PipelineSettingsResource

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    configure = readme[readme.index("## Configure") : readme.index("## Layout")]
    fields = PipelineSettingsResource.model_fields
    assert [name for name in fields if name not in configure] == []
    built = PipelineSettingsResource(work_root="w").settings()  # the resource's defaults
    core = PipelineSettings(built.work_root)  # the core's
    assert (built.limits, built.retention, built.decode) == (core.limits, core.retention,
                                                             core.decode)  # fmt: skip

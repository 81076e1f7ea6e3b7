"""Hostile files through `report-pipeline preview`, as a user would run it: each ends with a
documented exit code and a reason, within 1.5 GiB of peak memory (the preview and its decoders),
and nothing over the pixel cap is archived."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from report_pipeline.core.archive import store_json
from report_pipeline.core.settings import Limits
from report_pipeline_tests.conftest import FIXTURES

ROOT = FIXTURES.parent.parent

HOSTILE = sorted(
    p.name
    for p in FIXTURES.glob("*.pdf")
    if p.name.startswith(("hostile", "count_", "pixel_bomb", "broken_", "truncated", "type_"))
)
PEAK_LIMIT_KIB = 1536 * 1024
DOCUMENTED_EXITS = {0, 3, 4}


def preview(pdf, out) -> tuple[int, int, str]:
    """Exit code, peak RSS (KiB) of the preview process and every decoder it started, stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "report_pipeline.cli", "preview", str(pdf), "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss, stderr


def test_there_are_hostile_fixtures():
    assert len(HOSTILE) >= 4, HOSTILE


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_file_ends_with_a_reason_in_bounded_memory(name, tmp_path):
    code, peak_kib, stderr = preview(FIXTURES / name, tmp_path / "out")
    assert code in DOCUMENTED_EXITS, stderr
    assert "Traceback" not in stderr
    assert peak_kib < PEAK_LIMIT_KIB
    if code == 3:
        assert "refused (" in stderr
        return
    manifest = store_json.loads((tmp_path / "out" / "manifest.json").read_bytes())
    for child in manifest.children:
        assert child.state == "archived" or child.quarantine_reason
        if child.state == "archived":
            assert child.width * child.height <= Limits.max_image_pixels


def test_a_dagster_run_on_hostile_images_stays_bounded_and_archives_nothing_over_the_cap(tmp_path):
    """`dagster asset materialize` as an operator would run it, in its own process tree."""
    inbox = tmp_path / "inbox" / "2026-10"
    inbox.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "hostile_images.pdf", inbox / "report.pdf")
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home),
           "REPORT_PIPELINE_INBOX": str(tmp_path / "inbox"),
           "REPORT_PIPELINE_STORE": str(tmp_path / "store"),
           "REPORT_PIPELINE_WORK": str(tmp_path / "work")}  # fmt: skip
    command = [str(Path(sys.executable).with_name("dagster")), "asset", "materialize", "-m",
               "report_pipeline.definitions", "--select", "report_manifest", "--partition",
               "2026-10"]  # fmt: skip
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert usage.ru_maxrss < PEAK_LIMIT_KIB
    (manifest_path,) = (tmp_path / "store").rglob("manifest.json")
    manifest = store_json.loads(manifest_path.read_bytes())
    assert manifest.state == "complete" and manifest.counts.archived == 0
    assert {c.quarantine_reason for c in manifest.children} == {"dimension_mismatch"}

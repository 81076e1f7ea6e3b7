"""Hostile files through `report-pipeline preview`, as a user would run it, under a 3 GiB
address-space limit (`ulimit -v`): each ends with a documented exit code and a reason, within
1.5 GiB of peak memory (the preview, its page walk and its decoders) and 60 s of CPU, with no
traceback, and nothing over the pixel cap is archived.

Marked `live` (`make test`, not `make check`): each file is a process tree of its own, as a user
runs it (~1 s of CPU each, 17 of them, and a `dagster asset materialize`). The quick tier checks
what each ends with in-process: test_walk.py (the hostile walks refused in bounded CPU and time,
odd_names.pdf, broken_streams.pdf), test_fixture_cases.py and test_hostile_pdfs.py (the refused
files, the pixel bomb, the truncated JPEG, the type mismatch, the repaired xref),
test_image_classes.py (hostile_images.pdf's forged headers), test_filter_spellings.py,
test_reasons.py, test_type3.py and the oracle (their records), test_cli.py (`preview`'s exit
codes and refusals, never a traceback), test_isolation.py (the decoders' memory limit)."""

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from report_pipeline.core.model import store_json
from report_pipeline.core.model.settings import Limits
from report_pipeline_tests.conftest import FIXTURES

pytestmark = pytest.mark.live

ROOT = FIXTURES.parent.parent

HOSTILE = sorted(
    p.name
    for p in FIXTURES.glob("*.pdf")
    if p.name.startswith(
        (
            "hostile",
            "count_",
            "pixel_bomb",
            "broken_",
            "truncated",
            "type_",
            "filter_",
            "misleading_",
            "odd_",
            "type3_",
        )
    )  # fmt: skip
)
PEAK_LIMIT_KIB = 1536 * 1024
ADDRESS_SPACE = 3 << 30  # as `ulimit -v 3 GiB` would set it
CPU_LIMIT_S = 60
DOCUMENTED_EXITS = {0, 3, 4}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def preview(pdf, out) -> tuple[int, int, float, str]:
    """Exit code, peak RSS (KiB) and CPU seconds of the preview process and every child it
    started (page walk, decoders), and its stderr; under a 3 GiB address space."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(
        [sys.executable, "-m", "report_pipeline.cli", "preview", str(pdf), "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=_limited,
    )  # fmt: skip
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return process.returncode, usage.ru_maxrss, cpu, stderr


def test_there_are_hostile_fixtures():
    assert len(HOSTILE) >= 4, HOSTILE


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_file_ends_with_a_reason_in_bounded_memory(name, tmp_path):
    code, peak_kib, cpu, stderr = preview(FIXTURES / name, tmp_path / "out")
    assert code in DOCUMENTED_EXITS, stderr
    assert "Traceback" not in stderr and "Director" not in stderr
    assert peak_kib < PEAK_LIMIT_KIB and cpu < CPU_LIMIT_S
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

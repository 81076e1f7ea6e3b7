"""`preview`'s scratch in a shared $TMPDIR and its output folder: private, never through a
planted link, never changing a user's folder, and cleaned up after a killed run."""

from __future__ import annotations

import os
import stat
from datetime import timedelta

import pytest

from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.preview import UnsafeScratch, preview, scratch_base
from report_pipeline.core.scratch.workdir import create_workdir, lease_for, new_lease
from report_pipeline_tests.conftest import files_under, fixture_pdf

pytestmark = pytest.mark.slow


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def victim(tmp_path):
    """Somebody else's folder that a planted link points at."""
    folder = tmp_path / "victim"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    return folder


def test_scratch_is_created_private_and_reused(tmp_path):
    base = scratch_base(tmp_path)
    assert base.name == f"report_pipeline-preview-{os.getuid()}" and mode(base) == 0o700
    assert scratch_base(tmp_path) == base


def test_a_link_planted_where_the_scratch_goes_is_refused(tmp_path, victim):
    (tmp_path / f"report_pipeline-preview-{os.getuid()}").symlink_to(victim)
    with pytest.raises(UnsafeScratch):
        scratch_base(tmp_path)
    assert mode(victim) == 0o755 and list(victim.iterdir()) == []


def test_a_scratch_folder_open_to_others_is_refused(tmp_path):
    (tmp_path / f"report_pipeline-preview-{os.getuid()}").mkdir(mode=0o777)
    os.chmod(tmp_path / f"report_pipeline-preview-{os.getuid()}", 0o777)
    with pytest.raises(UnsafeScratch):
        scratch_base(tmp_path)


def test_preview_writes_private_files_into_an_existing_folder_without_changing_it(tmp_path):
    out = tmp_path / "shared-out"
    out.mkdir()
    os.chmod(out, 0o755)
    (out / "manifest.json").write_text("old")
    os.chmod(out / "manifest.json", 0o644)
    settings = PipelineSettings(scratch_base(tmp_path))
    manifest = preview(fixture_pdf("repeated_image.pdf"), out, settings)
    assert manifest.counts.distinct_images == 2 and mode(out) == 0o755
    assert sorted(mode(p) for p in out.iterdir()) == [0o600] * 3
    assert files_under(settings.work_root) == []  # its own scratch went in `finally`


def test_a_killed_previews_scratch_is_removed_by_the_next_preview(tmp_path):
    settings = PipelineSettings(scratch_base(tmp_path))
    hours_ago = utc_now() - timedelta(hours=3)
    killed = create_workdir(settings.work_root, new_lease("preview", hours_ago, 60, 15))
    (killed / "staged.pdf").write_bytes(b"%PDF- report material")
    running = create_workdir(settings.work_root, lease_for(settings, "another preview"))
    preview(fixture_pdf("no_images.pdf"), tmp_path / "out", settings)
    assert not killed.exists() and running.is_dir()
    assert mode(tmp_path / "out") == 0o700

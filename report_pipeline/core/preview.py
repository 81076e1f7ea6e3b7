"""`report-pipeline preview`: one PDF through the core, into a folder of PNGs and a manifest.

Scratch lives in a per-user private directory, usually in a shared $TMPDIR, so it is checked
before use: a real directory (never a planted link), ours, and 0700. Each preview works in a
leased workdir inside it; a preview that was killed leaves its workdir behind, and the next
preview removes every workdir whose lease has run out (the janitor's own sweep).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.model.store_json import dumps
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.retention import janitor
from report_pipeline.core.scratch.workdir import lease_for, private_workdir
from report_pipeline.core.storage.local_store import LocalStore

SCRATCH_NAME = "report_pipeline-preview-{uid}"
_NEW_PRIVATE = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW


class UnsafeScratch(Exception):
    """The scratch directory exists but is not a private directory of this user."""


def scratch_base(parent: Path) -> Path:
    """`<parent>/report_pipeline-preview-<uid>`, created 0700, or refused when what is there
    is a link, not a directory, someone else's, or open to others."""
    base = Path(parent) / SCRATCH_NAME.format(uid=os.getuid())
    with contextlib.suppress(FileExistsError):
        os.mkdir(base, 0o700)
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise UnsafeScratch(
            f"{base} is not a private (0700) directory owned by you; remove it and try again"
        )
    return base


def remove_stale_scratch(base: Path) -> int:
    """Delete workdirs of earlier previews whose lease has run out; returns how many."""
    swept = janitor.JanitorPass()
    janitor.sweep_workdirs(base, utc_now(), swept)
    return len(swept.deletions)


def output_folder(out_dir: Path) -> Path:
    """Create `out_dir` 0700 when it is missing; an existing folder keeps its mode."""
    try:
        out_dir.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        if not out_dir.is_dir() or out_dir.is_symlink():
            raise
    return out_dir


def write_private(path: Path, data: bytes) -> None:
    """Write `path` as a 0600 file, replacing its content; never through a link."""
    fd = os.open(path, _NEW_PRIVATE | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file would keep its old mode
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def copy_new_private(source: Path, target: Path) -> None:
    """Copy to a new 0600 file; a file already there (same content hash) is kept."""
    try:
        fd = os.open(target, _NEW_PRIVATE | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
        shutil.copyfileobj(src, out)


def preview(source: Path, out_dir: Path, settings: PipelineSettings) -> Manifest:
    """Process one PDF into `out_dir`: <content hash>.png per distinct image + manifest.json.

    `settings.work_root` is the scratch base (see `scratch_base`)."""
    month = utc_now().strftime("%Y-%m")
    remove_stale_scratch(settings.work_root)
    with private_workdir(settings.work_root, lease_for(settings, "preview")) as scratch:
        store = LocalStore(scratch / "store")
        scratch_settings = replace(settings, work_root=scratch / "work")
        manifest = run_report(store, source, scratch_settings, "preview", month)
        out = output_folder(out_dir)
        for child in manifest.children:
            if child.object_key and child.state == "archived":
                target = out / f"{child.content_hash}.png"
                copy_new_private(store.root / child.object_key, target)
        write_private(out / "manifest.json", dumps(manifest))
    return manifest

"""One report run of the core pipeline (core/pipeline.py, no Dagster) in a process of its own,
with the storage fault layer (devstack/faults.py) in front of its store when
`REPORT_PIPELINE_STORAGE_FAULTS` is set: a real run for a fault test to hold at a chosen write
(`pause=<key pattern>,signal=<file>`, and `pause_method=` for a read) and then kill or let go on.

    python -m report_pipeline_tests.held_run STORE WORK_ROOT PDF MONTH

STORE is `local:<root>` or `s3:<endpoint>:<bucket>:<prefix>` (credentials from the environment).
It prints `published <state> <manifest key>` once the manifest is written. Beside it, what a
fault test starts, holds, kills or lets go of, and what it reads back from the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from devstack.faults import FAULTS_ENV, with_faults
from report_pipeline.core.model import keys
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import Store
from report_pipeline_tests.clock import faketime_env, forget_faketime


def store_from(spec: str) -> Store:
    kind, _, where = spec.partition(":")
    if kind == "local":
        return LocalStore(where)
    from report_pipeline_tests.s3 import client

    endpoint, bucket, prefix = where.rsplit(":", 2)
    return S3Store(client(endpoint), bucket, prefix=prefix)


def store_spec(store: Store) -> str:
    """The STORE argument that opens `store` again in another process."""
    if isinstance(store, LocalStore):
        return f"local:{store.root}"
    endpoint = store.client.meta.endpoint_url
    return f"s3:{endpoint}:{store.bucket}:{store.prefix.rstrip('/')}"


REPO = Path(__file__).resolve().parents[1]


def start(
    store: Store, work_root: Path, pdf: Path, month: str, faults: str = "", shift: str = "",
) -> subprocess.Popen:  # fmt: skip
    """This module's run in a new process, behind the fault spec `faults`; `shift` (libfaketime's
    offset, such as `-30m`) runs it with its clock that far off."""
    env = {**os.environ, FAULTS_ENV: faults, **(faketime_env(shift) if shift else {})}
    command = [sys.executable, "-m", __name__, store_spec(store), str(work_root), str(pdf), month]
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True
    )  # its own process group: a kill takes the decoders along


def held_at(run: subprocess.Popen, signal_file: Path, timeout: float = 120.0) -> dict:
    """Wait until `run` holds the write its `pause=...,signal=signal_file` names: what it holds
    (pid, method, key, when)."""
    give_up = time.monotonic() + timeout
    while not signal_file.exists():
        assert run.poll() is None, f"the run ended ({run.returncode}) before the held write"
        assert time.monotonic() < give_up, "the run never reached the held write"
        time.sleep(0.01)
    return json.loads(signal_file.read_text())


def kill(run: subprocess.Popen) -> float:
    """SIGKILL to the run's process group: no `finally`, no atexit, as an OOM kill or a lost
    host. When it died (monotonic)."""
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    assert run.returncode == -signal.SIGKILL
    forget_faketime(run.pid)
    return time.monotonic()


def gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process `pid` has ended (a zombie not yet reaped counts as ended)."""
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.01)
    return False


def let_go(run: subprocess.Popen, signal_file: Path, timeout: float = 120.0) -> tuple[int, str]:
    """Let a held run go on: its exit status and last line (`published <state> <key>`)."""
    Path(f"{signal_file}.go").touch()
    out, _ = run.communicate(timeout=timeout)
    return run.returncode, (out.strip().splitlines() or [""])[-1]


def finish(run: subprocess.Popen, signal_file: Path, timeout: float = 120.0) -> str:
    """Let a held run go on, and see it publish: its last line."""
    status, line = let_go(run, signal_file, timeout)
    assert status == 0, line
    return line


def listing(store: Store, prefix: str = "") -> dict[str, float]:
    """Every object under `prefix`: key -> modification time (a rewrite changes it)."""
    return {o.key: o.modified for o in store.list(prefix)}


def assert_archive_matches(store: Store, manifest: Manifest) -> set[str]:
    """The revision's images are exactly the manifest's distinct hashes, each one's bytes what
    its key says: the archived object keys."""
    prefix = keys.archive_prefix(manifest.report_id, manifest.parent_revision)
    images = set(listing(store, f"{prefix}/{keys.IMAGES}/"))
    hashes = {c.content_hash for c in manifest.children if c.state == "archived"}
    assert images == {keys.image_key(manifest.report_id, manifest.parent_revision, h)
                      for h in hashes}  # fmt: skip
    for key in images:
        assert key.endswith(f"/{hashlib.sha256(store.get_bytes(key, 1 << 26)).hexdigest()}.png")
    referenced = {c.object_key for c in manifest.children if c.object_key}
    assert referenced <= set(listing(store, prefix)), "the manifest names a missing object"
    return referenced


def main(argv: list[str]) -> None:
    spec, work_root, pdf, month = argv
    store = with_faults(store_from(spec), os.environ.get(FAULTS_ENV, ""))
    manifest = run_report(store, Path(pdf), PipelineSettings(Path(work_root)), "inbox", month)
    key = keys.manifest_key(manifest.report_id, manifest.parent_revision)
    print(f"published {manifest.state} {key}", flush=True)
    forget_faketime(os.getpid())


if __name__ == "__main__":
    main(sys.argv[1:])

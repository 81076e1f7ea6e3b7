"""A Celery worker for the tests, run as a script: `python celery_probe.py --name w1`.

It is `report_pipeline.celery_worker` plus a record of the files its processes open (main
process, pool, forked decoders alike: Python audit hooks, `sys.addaudithook`), so a test can
check that no step read a local file another step wrote. For every open, rename or link of a
path under `$RP_TEST_WATCH` it appends one JSON line to `<worker folder>/files.jsonl` (the
folder holding DAGSTER_HOME): pid, the Celery task id and step keys being run (empty outside
a task), `r` or `w`, and the path. Each task start is recorded too (`op: "task"`).

Not seen: files opened by C code without Python (MuPDF opening the report its step fetched into
its own workdir), and reads through descriptors opened earlier.

With `$RP_TEST_STALL` set (a file path), the first `extract_pages` step that writes under this
worker's REPORT_PIPELINE_WORK (its workdir's lease) writes that file and then hangs, so the test
can SIGKILL the worker mid-step.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

WATCH = os.path.realpath(os.environ.pop("RP_TEST_WATCH"))
STALL = os.environ.pop("RP_TEST_STALL", "")
LOG = os.path.join(os.path.dirname(os.environ["DAGSTER_HOME"]), "files.jsonl")
WORK = os.path.realpath(os.environ["REPORT_PIPELINE_WORK"])
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
current = {"task": "", "steps": ""}
guard = threading.local()
stalled = False


def watched(value) -> str | None:
    if isinstance(value, int):
        return None
    try:
        path = os.path.abspath(os.fsdecode(os.fspath(value)))
    except TypeError:
        return None
    return path if path == WATCH or path.startswith(WATCH + os.sep) else None


def emit(op: str, path: str) -> None:
    line = {"pid": os.getpid(), **current, "op": op, "path": path}
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def stall(path: str) -> None:
    global stalled
    stalled = True
    with open(STALL, "w") as marker:
        json.dump({"pid": os.getpid(), **current, "path": path}, marker)
    while True:  # until the test kills this worker
        time.sleep(1)


def hook(event: str, args: tuple) -> None:
    if event not in ("open", "os.rename", "os.replace", "os.link", "os.symlink"):
        return
    if getattr(guard, "on", False):
        return
    guard.on = True
    try:
        if event == "open":
            path, mode, flags = (list(args) + [None, None])[:3]
            if isinstance(mode, str):
                writing = any(c in mode for c in "wax+")
            else:
                writing = bool((flags or 0) & WRITE_FLAGS)
        else:
            path, writing = args[1], True  # the destination gets new contents
        found = watched(path)
        if found is None:
            return
        emit("w" if writing else "r", found)
        in_work = found.startswith(WORK + os.sep)
        if STALL and not stalled and writing and in_work and "extract_pages" in current["steps"]:
            stall(found)
    finally:
        guard.on = False


def track_tasks() -> None:
    from celery.signals import task_postrun, task_prerun
    from dagster._grpc.types import ExecuteStepArgs
    from dagster._serdes import unpack_value

    @task_prerun.connect(weak=False)
    def started(task_id=None, kwargs=None, **_):
        step_args = unpack_value(kwargs["execute_step_args_packed"], as_type=ExecuteStepArgs)
        current.update(task=task_id, steps=",".join(step_args.step_keys_to_execute or []))
        guard.on = True
        try:
            emit("task", "")
        finally:
            guard.on = False

    @task_postrun.connect(weak=False)
    def finished(**_):
        current.update(task="", steps="")


if __name__ == "__main__":
    sys.addaudithook(hook)
    track_tasks()
    from report_pipeline.celery_worker import main

    sys.exit(main())

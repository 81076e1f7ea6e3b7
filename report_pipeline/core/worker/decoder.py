"""The decoder's side of isolation: confinement, the page loop, and the wire format.

A frame is two big-endian lengths, a JSON header and the payload bytes (a PNG, or a quarantined
stream kept as evidence). Nothing but JSON and bytes crosses: the parent never unpickles what
a child that has read hostile input sends it.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import signal
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.outcome import ImageOutcome
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.model.store_json import record_to_dict
from report_pipeline.core.worker import validation
from report_pipeline.core.worker.extract import Processed, hidden_outcome, process_image
from report_pipeline.core.worker.pdf_pages import Draws, ImageRef, expand, open_pdf, page_images
from report_pipeline.core.worker.reopening import Reopening

EXIT_ERROR, EXIT_MEMORY = 70, 75
_HEAD = struct.Struct(">II")
MAX_HEADER, MAX_PAYLOAD = 1 << 20, 1 << 30


@dataclass(frozen=True)
class Confinement:
    memory_bytes: int  # address space a child may add to what it has at the fork
    cpu_seconds: int


@dataclass(frozen=True)
class Decoded:
    """One image draw's result. `outcome` is None when it repeats an image decoded earlier in
    the task (same xref): that image's outcome and object hold for it too. `hidden`: why a
    viewer does not show this draw ("" when it does)."""

    page: int
    index: int
    origin: str
    xref: int
    outcome: ImageOutcome | None
    payload: bytes | None
    hidden: str = ""


class ChildGone(Exception):
    """The other end closed the socket."""


def send(sock: socket.socket, message: dict, payload: bytes = b"") -> None:
    header = json.dumps(message).encode()
    sock.sendall(_HEAD.pack(len(header), len(payload)) + header)
    if payload:
        sock.sendall(payload)


def receive(sock: socket.socket) -> tuple[dict, bytes]:
    sizes = _exact(sock, _HEAD.size)
    header, payload = _HEAD.unpack(sizes)
    if header > MAX_HEADER or payload > MAX_PAYLOAD:
        raise ValueError("oversized frame")
    return json.loads(_exact(sock, header)), _exact(sock, payload)


def _exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ChildGone()
        data += chunk
    return bytes(data)


def decoded(message: dict, payload: bytes, poisoned: dict[int, tuple[str, str]]) -> Decoded:
    """The parent's reading of an "image", "repeat" or "poisoned" message."""
    if message["t"] == "poisoned":
        return crash_outcome(message, *poisoned[message["xref"]])
    where = (message["page"], message["index"], message["origin"], message["xref"])
    hidden = message.get("hidden", "")
    if message["t"] == "repeat":
        return Decoded(*where, None, None, hidden)
    return Decoded(*where, ImageOutcome(**message["outcome"]), payload or None, hidden)


def crash_outcome(where: dict, reason: str, detail: str) -> Decoded:
    """A quarantine for the image a decoder died on (no evidence: the parent reads no bytes)."""
    now = iso(utc_now())
    page, index, origin, xref = where["page"], where["index"], where["origin"], where["xref"]
    declared = where.get("declared_type", "unknown")  # the parent read it before the decode
    hidden = where.get("hidden", "")
    outcome = ImageOutcome(
        page, index, "quarantined", reason, detail, declared, None, where["width"],
        where["height"], None, None, 0, 0, now, now, origin, xref, hidden=hidden,
    )  # fmt: skip
    return Decoded(page, index, origin, xref, outcome, None, hidden)


def _where(ref: ImageRef) -> dict:
    return {"page": ref.page, "index": ref.index, "origin": ref.origin, "xref": ref.xref,
            "width": ref.width, "height": ref.height,
            "declared_type": validation.declared_type(ref), "hidden": ref.hidden}  # fmt: skip


def _process(doc, ref: ImageRef, limits: Limits) -> Processed:
    if ref.hidden and not limits.archive_hidden:
        return Processed(hidden_outcome(ref), None)  # nothing of it read, nothing decoded
    try:
        return process_image(doc, ref, limits)
    except MemoryError:
        lost = crash_outcome(_where(ref), "memory_limit", "decoding needs more than the limit")
        return Processed(lost.outcome, None)


def decode_in_process(
    path: Path, pages: list[int], limits: Limits, settings: object = None, cpu_budget: float = 0.0,
    known: dict[int, Draws] | None = None,
) -> Iterator[Decoded]:  # fmt: skip
    """isolation.decode_pages' results without a child process, so without its confinement
    (`settings` and `cpu_budget` unused): never on a product path. The benchmark's plain loop and
    the test that compares the pool against it pass it to `run_report`."""
    known = known or {}
    with open_pdf(path) as doc:
        seen: set[int] = set()
        for page in pages:
            for ref in page_images(doc, page, known.get(page)):
                where = (ref.page, ref.index, ref.origin, ref.xref)
                if ref.xref in seen and not _left_hidden(ref, limits):
                    yield Decoded(*where, None, None, ref.hidden)
                    continue
                processed = _process(doc, ref, limits)
                if ref.xref and not _left_hidden(ref, limits):
                    seen.add(ref.xref)
                yield Decoded(*where, processed.outcome, processed.payload, ref.hidden)


def child_main(sock: socket.socket, path: Path, limits: Limits, limit: Confinement) -> NoReturn:
    code = EXIT_ERROR
    try:
        confine(sock.fileno(), limit)
        with Reopening.within(path, limit.memory_bytes) as pages:  # memory bounded per page
            seen: set[int] = set()
            while True:
                try:
                    job, _ = receive(sock)
                except ChildGone:
                    break
                _page(sock, pages.next_page(), job, limits, seen)
        code = 0
    except MemoryError:
        code = EXIT_MEMORY
    finally:
        os._exit(code)


def _page(sock: socket.socket, doc, job: dict, limits: Limits, seen: set[int]) -> None:
    skip = {xref for xref, _, _ in job["skip"]}
    known = expand(job["known"]) if "known" in job else None
    for ref in page_images(doc, job["page"], known)[job["start"] :]:
        where = _where(ref)
        if (ref.xref in skip or ref.xref in seen) and not _left_hidden(ref, limits):
            kind = "poisoned" if ref.xref in skip else "repeat"
            send(sock, {"t": kind, **where, "cpu": _cpu()})
            continue
        send(sock, {"t": "begin", **where})
        processed = _process(doc, ref, limits)
        if ref.xref and not _left_hidden(ref, limits):
            seen.add(ref.xref)
        outcome = record_to_dict(processed.outcome)
        message = {"t": "image", **where, "outcome": outcome, "cpu": _cpu()}
        send(sock, message, processed.payload or b"")
    send(sock, {"t": "done", "page": job["page"], "cpu": _cpu()})


def _left_hidden(ref: ImageRef, limits: Limits) -> bool:
    """A draw a viewer does not show, left undecoded (the deployment does not archive them):
    its record stands alone, and a shown draw of the same image is decoded for itself."""
    return bool(ref.hidden) and not limits.archive_hidden


def ended(status: int) -> tuple[str, str]:
    """How a confined child ended (its wait status): "cpu" (past its CPU limit), "memory" (past
    its address space) or "crashed", and what to say of it ("died with signal 9")."""
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return "cpu", "used up its CPU limit"
    if os.WIFSIGNALED(status):
        return "crashed", f"died with signal {os.WTERMSIG(status)}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    if code == EXIT_MEMORY:
        return "memory", "ran out of its memory limit"
    return "crashed", f"exited with status {code}"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def confine(keep: int, limit: Confinement) -> None:
    """Only the socket stays open; no environment; memory, CPU and core dumps limited."""
    gc.disable()  # objects inherited from the parent must not be finalized here
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    os.environ.clear()
    with open("/proc/self/statm") as statm:
        size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    memory = size + limit.memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (limit.cpu_seconds, limit.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

"""Decoding in child processes: a crash, a runaway allocation or a hang costs one image, not a run.

`decode_pages` yields one `Decoded` per image draw of the given pages. The work runs in a pool of
forked children, each confined before it reads the PDF:
an address-space limit (RLIMIT_AS: what it has at the fork plus `memory_bytes`), a CPU limit
(the task's CPU budget), no core dumps, an empty environment, /dev/null on stdio and no other
inherited descriptor than its socket. Pages are handed out one at a time, so a report uses every
child; results and quarantines are the same as decoding in one process, in any order.

When a child dies, the image it was decoding is quarantined (`decoder_crashed`, `memory_limit`,
`decode_timeout`) and a fresh child goes on after it. An image that killed a child is not tried
again on a later page. A task that spends more CPU than its budget raises `CpuBudgetExceeded`.
"""

from __future__ import annotations

import os
import resource
import selectors
import signal
import socket
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from report_pipeline.core.model.settings import DecodeSettings, Limits
from report_pipeline.core.worker import decoder
from report_pipeline.core.worker.decoder import Decoded, crash_outcome
from report_pipeline.core.worker.pdf_pages import Draws, compact


class CpuBudgetExceeded(Exception):
    """The task's decoders used more CPU than its share of the report's budget."""


def decode_pages(
    path: Path, pages: list[int], limits: Limits, settings: DecodeSettings, cpu_budget: float,
    known: dict[int, Draws] | None = None,
) -> Iterator[Decoded]:  # fmt: skip
    """`known`: pages' draws as the planning walk found them (plan_store.read_draws); a page
    without them is walked by its decoder."""
    known = known or {}
    pool = _Pool(path, limits, settings, cpu_budget, known)
    try:
        yield from pool.run(pages)
    finally:
        pool.stop()


@dataclass
class _Child:
    pid: int
    sock: socket.socket
    job: tuple[int, int] | None = None  # (page, next index) being worked on
    current: dict | None = None  # the image being decoded ("begin" seen, no result yet)
    deadline: float = 0.0
    cpu: float = 0.0


@dataclass
class _Pool:
    path: Path
    limits: Limits
    settings: DecodeSettings
    cpu_budget: float
    known: dict[int, Draws]
    children: list[_Child] = field(default_factory=list)
    jobs: deque = field(default_factory=deque)
    poisoned: dict[int, tuple[str, str]] = field(default_factory=dict)
    cpu_done: float = 0.0
    retried: set[tuple[int, int]] = field(default_factory=set)
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)

    def run(self, pages: list[int]) -> Iterator[Decoded]:
        self.jobs.extend((page, 0) for page in pages)
        while self.jobs or any(c.job for c in self.children):
            self._assign()
            ready = self.selector.select(timeout=self._wait())
            for key, _ in ready:
                yield from self._read(key.data)
            for child in [c for c in self.children if c.job and time.monotonic() > c.deadline]:
                yield from self._lost(child, "decode_timeout", self._too_long(child))
            if self.cpu_done + sum(c.cpu for c in self.children) > self.cpu_budget:
                raise CpuBudgetExceeded(f"decoding used more than {self.cpu_budget:.0f} CPU s")

    def _assign(self) -> None:
        while self.jobs and len(self.children) < self.settings.pool_size():
            self._spawn()
        for child in self.children:
            if child.job is None and self.jobs:
                child.job = self.jobs.popleft()
                child.deadline = time.monotonic() + self.settings.image_seconds
                page, start = child.job
                skip = [[x, *why] for x, why in self.poisoned.items()]
                job = {"page": page, "start": start, "skip": skip}
                if page in self.known:
                    job["known"] = compact(self.known[page])
                decoder.send(child.sock, job)

    def _wait(self) -> float:
        busy = [c.deadline for c in self.children if c.job]
        return max(0.0, min(busy) - time.monotonic()) if busy else 0.1

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            ours.close()
            decoder.child_main(theirs, self.path, self.limits, self._confinement())
        theirs.close()
        ours.settimeout(self.settings.image_seconds)
        child = _Child(pid, ours)
        self.children.append(child)
        self.selector.register(ours, selectors.EVENT_READ, child)

    def _confinement(self) -> decoder.Confinement:
        cpu = max(1, int(self.cpu_budget + 1))
        return decoder.Confinement(self.settings.memory_bytes, cpu)

    def _read(self, child: _Child) -> Iterator[Decoded]:
        try:
            message, payload = decoder.receive(child.sock)
        except (OSError, ValueError, decoder.ChildGone):
            yield from self._lost(child, *self._death_reason(child))
            return
        child.deadline = time.monotonic() + self.settings.image_seconds
        child.cpu = message.get("cpu", child.cpu)
        kind = message["t"]
        if kind == "begin":
            child.current = message
            budget = self.settings.image_budget(message["width"], message["height"])
            child.deadline = time.monotonic() + budget
        elif kind == "done":
            child.job, child.current = None, None
        elif kind in {"image", "repeat", "poisoned"}:
            child.current = None
            child.job = (message["page"], message["index"] + 1)
            yield decoder.decoded(message, payload, self.poisoned)

    def _too_long(self, child: _Child) -> str:
        current = child.current
        if current is None:
            return "finding the page's images took too long"
        budget = self.settings.image_budget(current["width"], current["height"])
        return (
            f"decoding took longer than its {budget:.0f} s budget for {current['width']}x"
            f"{current['height']}"
        )

    def _death_reason(self, child: _Child) -> tuple[str, str]:
        how, said = decoder.ended(self._reap(child))
        if how == "cpu":
            raise CpuBudgetExceeded(f"a decoder used more than {self.cpu_budget:.0f} CPU s")
        return "memory_limit" if how == "memory" else "decoder_crashed", f"the decoder {said}"

    def _lost(self, child: _Child, reason: str, detail: str) -> Iterator[Decoded]:
        """The child is gone (or is killed now): quarantine its image, resume after it."""
        if reason == "decode_timeout":
            os.kill(child.pid, signal.SIGKILL)
            self._reap(child)
        job, current = child.job, child.current
        self.children.remove(child)
        if current is not None:
            if current["xref"]:
                self.poisoned[current["xref"]] = (reason, detail)
            yield crash_outcome(current, reason, detail)
            self.jobs.appendleft((current["page"], current["index"] + 1))
        elif job is not None and job not in self.retried:
            self.retried.add(job)  # died between images: that place is tried once more; a
            self.jobs.appendleft(job)  # page left short shows as incomplete in the manifest

    def _reap(self, child: _Child) -> int:
        if child.sock.fileno() >= 0:
            self.selector.unregister(child.sock)
            child.sock.close()
        _, status, usage = os.wait4(child.pid, 0)
        self.cpu_done += usage.ru_utime + usage.ru_stime
        child.cpu = 0.0
        return status

    def stop(self) -> None:
        for child in self.children:
            if child.job:  # stopped early (budget, error): its work is not wanted
                os.kill(child.pid, signal.SIGKILL)
            else:
                child.sock.shutdown(socket.SHUT_WR)  # no more jobs: the child exits
        for child in list(self.children):
            self._reap(child)
        self.children.clear()
        self.selector.close()


def peak_child_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

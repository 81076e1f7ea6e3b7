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

import resource
import selectors
import socket
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from report_pipeline.core.decode import child as decoder
from report_pipeline.core.decode import messages as m
from report_pipeline.core.decode.child import Decoded, crash_outcome
from report_pipeline.core.model.settings import DecodeSettings, Limits
from report_pipeline.core.pdf.pages import Draws, compact
from report_pipeline.core.sandbox import wire
from report_pipeline.core.sandbox.child import Child, Confinement, ended, spawn


class CpuBudgetExceeded(Exception):
    """The task's decoders used more CPU than its share of the report's budget."""


def decode_pages(
    path: Path, pages: list[int], limits: Limits, settings: DecodeSettings, cpu_budget: float,
    known: dict[int, Draws] | None = None,
) -> Iterator[Decoded]:  # fmt: skip
    """`known`: pages' draws as the planning walk found them (plan.store.read_draws); a page
    without them is walked by its decoder."""
    known = known or {}
    pool = _Pool(path, limits, settings, cpu_budget, known)
    try:
        yield from pool.run(pages)
    finally:
        pool.stop()


@dataclass
class _Decoder:
    proc: Child
    job: tuple[int, int] | None = None  # (page, next index) being worked on
    current: m.Where | None = None  # the image being decoded (Begin seen, no result yet)
    deadline: float = 0.0
    cpu: float = 0.0


@dataclass
class _Pool:
    path: Path
    limits: Limits
    settings: DecodeSettings
    cpu_budget: float
    known: dict[int, Draws]
    children: list[_Decoder] = field(default_factory=list)
    jobs: deque = field(default_factory=deque)
    poisoned: dict[int, tuple[str, str]] = field(default_factory=dict)
    cpu_done: float = 0.0
    retried: set[tuple[int, int]] = field(default_factory=set)
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)

    def run(self, pages: list[int]) -> Iterator[Decoded]:
        for decoded in self._results(pages):
            handed = time.monotonic()
            yield decoded
            self._held(time.monotonic() - handed)

    def _held(self, seconds: float) -> None:
        """The caller held a result this long (a stalled upload, a slow store) before asking for
        the next: the busy children's clocks stop for it. A child waits on its full socket or
        idles after its work meanwhile, so counting that time would quarantine good images as
        `decode_timeout`. A child that truly hangs still meets its deadline, later by as much;
        its CPU limit does not move."""
        for child in self.children:
            if child.job:
                child.deadline += seconds

    def _results(self, pages: list[int]) -> Iterator[Decoded]:
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
                known = compact(self.known[page]) if page in self.known else None
                wire.send(child.proc.sock, m.Job(page=page, start=start, skip=skip, known=known))

    def _wait(self) -> float:
        busy = [c.deadline for c in self.children if c.job]
        return max(0.0, min(busy) - time.monotonic()) if busy else 0.1

    def _spawn(self) -> None:
        limit = Confinement(self.settings.memory_bytes, max(1, int(self.cpu_budget + 1)))
        work = decoder.work(self.path, self.limits, self.settings.memory_bytes)
        child = _Decoder(spawn(work, limit))
        child.proc.sock.settimeout(self.settings.image_seconds)
        self.children.append(child)
        self.selector.register(child.proc.sock, selectors.EVENT_READ, child)

    def _read(self, child: _Decoder) -> Iterator[Decoded]:
        try:
            msg, payload = wire.receive(child.proc.sock)
        except (OSError, ValueError, wire.ChildGone):
            yield from self._lost(child, *self._death_reason(child))
            return
        child.deadline = time.monotonic() + self.settings.image_seconds
        child.cpu = getattr(msg, "cpu", child.cpu)
        if isinstance(msg, m.Begin):
            child.current = msg.where
            budget = self.settings.image_budget(msg.where.width, msg.where.height)
            child.deadline = time.monotonic() + budget
        elif isinstance(msg, m.Done):
            child.job, child.current = None, None
        elif isinstance(msg, m.Image | m.Repeat | m.Poisoned):
            child.current = None
            child.job = (msg.where.page, msg.where.index + 1)
            yield decoder.decoded(msg, payload, self.poisoned)

    def _too_long(self, child: _Decoder) -> str:
        current = child.current
        if current is None:
            return "finding the page's images took too long"
        budget = self.settings.image_budget(current.width, current.height)
        size = f"{current.width}x{current.height}"
        return f"decoding took longer than its {budget:.0f} s budget for {size}"

    def _death_reason(self, child: _Decoder) -> tuple[str, str]:
        how, said = ended(self._reap(child))
        if how == "cpu":
            raise CpuBudgetExceeded(f"a decoder used more than {self.cpu_budget:.0f} CPU s")
        return "memory_limit" if how == "memory" else "decoder_crashed", f"the decoder {said}"

    def _lost(self, child: _Decoder, reason: str, detail: str) -> Iterator[Decoded]:
        """The child is gone (or is killed now): quarantine its image, resume after it."""
        if reason == "decode_timeout":
            child.proc.kill()
            self._reap(child)
        job, current = child.job, child.current
        self.children.remove(child)
        if current is not None:
            if current.xref:
                self.poisoned[current.xref] = (reason, detail)
            yield crash_outcome(current, reason, detail)
            self.jobs.appendleft((current.page, current.index + 1))
        elif job is not None and job not in self.retried:
            self.retried.add(job)  # died between images: that place is tried once more; a
            self.jobs.appendleft(job)  # page left short shows as incomplete in the manifest

    def _reap(self, child: _Decoder) -> int:
        if child.proc.sock.fileno() >= 0:
            self.selector.unregister(child.proc.sock)
        status, cpu = child.proc.reap()
        self.cpu_done += cpu
        child.cpu = 0.0
        return status

    def stop(self) -> None:
        for child in self.children:
            if child.job:  # stopped early (budget, error): its work is not wanted
                child.proc.kill()
            else:
                child.proc.sock.shutdown(socket.SHUT_WR)  # no more jobs: the child exits
        for child in list(self.children):
            self._reap(child)
        self.children.clear()
        self.selector.close()


def peak_child_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

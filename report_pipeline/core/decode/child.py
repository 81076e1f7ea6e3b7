"""A decoder child's side of the pool: its page loop, under the sandbox's confinement, and the
same work without a child (`decode_in_process`, for the benchmark's plain loop and the tests that
compare the pool against it).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from report_pipeline.core.decode import messages as m
from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.outcome import ImageOutcome
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import Draws, ImageRef, expand, open_pdf, page_images
from report_pipeline.core.pdf.reopening import Reopening
from report_pipeline.core.sandbox import wire
from report_pipeline.core.sandbox.child import cpu_used
from report_pipeline.core.validate import validation
from report_pipeline.core.validate.per_image import Processed, hidden_outcome, process_image


@dataclass(frozen=True)
class Decoded:
    """One image draw's result. `outcome` is None when it repeats an image decoded earlier in
    the task (same xref under the same default colour spaces, `defaults`): that image's outcome
    and object hold for it too, at this draw's place. `hidden`: why a viewer does not show this
    draw ("" when it does)."""

    page: int
    index: int
    origin: str
    xref: int
    outcome: ImageOutcome | None
    payload: bytes | None
    hidden: str = ""
    defaults: str = ""

    @property
    def share(self) -> tuple[int, str]:
        return self.xref, self.defaults


def decoded(msg: m.Image | m.Repeat | m.Poisoned, payload: bytes,
            poisoned: dict[int, tuple[str, str]]) -> Decoded:  # fmt: skip
    """The parent's reading of a child's reply for one draw."""
    where = msg.where
    if isinstance(msg, m.Poisoned):
        return crash_outcome(where, *poisoned[where.xref])
    place = (where.page, where.index, where.origin, where.xref)
    if isinstance(msg, m.Repeat):
        return Decoded(*place, None, None, where.hidden, where.defaults)
    return Decoded(*place, msg.outcome, payload or None, where.hidden, where.defaults)


def crash_outcome(where: m.Where, reason: str, detail: str) -> Decoded:
    """A quarantine for the image a decoder died on (no evidence: the parent reads no bytes)."""
    now = iso(utc_now())
    outcome = ImageOutcome(
        page=where.page, index=where.index, state="quarantined", reason=reason, detail=detail,
        declared_type=where.declared_type,  # the parent read it before the decode
        signature=None, width=where.width, height=where.height, mode=None, content_hash=None,
        png_bytes=0, stream_bytes=0, started_at=now, finished_at=now, origin=where.origin,
        xref=where.xref, hidden=where.hidden,
    )  # fmt: skip
    return Decoded(
        where.page,
        where.index,
        where.origin,
        where.xref,
        outcome,
        None,
        where.hidden,
        where.defaults,
    )


def where_of(ref: ImageRef) -> m.Where:
    return m.Where(page=ref.page, index=ref.index, origin=ref.origin, xref=ref.xref,
                   width=ref.width, height=ref.height,
                   declared_type=validation.declared_type(ref), hidden=ref.hidden,
                   defaults=ref.defaults)  # fmt: skip


def _process(doc, ref: ImageRef, limits: Limits) -> Processed:
    if ref.hidden and not limits.archive_hidden:
        return Processed(hidden_outcome(ref), None)  # nothing of it read, nothing decoded
    try:
        return process_image(doc, ref, limits)
    except MemoryError:
        lost = crash_outcome(where_of(ref), "memory_limit", "decoding needs more than the limit")
        return Processed(lost.outcome, None)


def decode_in_process(
    path: Path, pages: list[int], limits: Limits, settings: object = None, cpu_budget: float = 0.0,
    known: dict[int, Draws] | None = None,
) -> Iterator[Decoded]:  # fmt: skip
    """pool.decode_pages' results without a child process, so without its confinement
    (`settings` and `cpu_budget` unused): never on a product path. The benchmark's plain loop and
    the test that compares the pool against it pass it to `run_report`."""
    known = known or {}
    with open_pdf(path) as doc:
        seen: set[tuple[int, str]] = set()
        for page in pages:
            for ref in page_images(doc, page, known.get(page)):
                where = (ref.page, ref.index, ref.origin, ref.xref)
                if ref.share in seen and not _left_hidden(ref, limits):
                    yield Decoded(*where, None, None, ref.hidden, ref.defaults)
                    continue
                processed = _process(doc, ref, limits)
                if ref.xref and not _left_hidden(ref, limits):
                    seen.add(ref.share)
                yield Decoded(*where, processed.outcome, processed.payload, ref.hidden,
                              ref.defaults)  # fmt: skip


def work(path: Path, limits: Limits, memory_bytes: int):
    """The child's work (sandbox.child.spawn runs it confined): pages, one job at a time, until
    the parent closes its end."""

    def run(sock: socket.socket) -> None:
        with Reopening.within(path, memory_bytes) as pages:  # memory bounded per page
            seen: set[tuple[int, str]] = set()
            while True:
                try:
                    job, _ = wire.receive(sock)
                except wire.ChildGone:
                    return
                _page(sock, pages.next_page(), job, limits, seen)

    return run


def _page(sock: socket.socket, doc, job: m.Job, limits: Limits, seen: set[tuple[int, str]],
          ) -> None:  # fmt: skip
    skip = {xref for xref, _, _ in job.skip}
    known = expand(job.known) if job.known is not None else None
    for ref in page_images(doc, job.page, known)[job.start :]:
        where = where_of(ref)
        if (ref.xref in skip or ref.share in seen) and not _left_hidden(ref, limits):
            kind = m.Poisoned if ref.xref in skip else m.Repeat
            wire.send(sock, kind(where=where, cpu=cpu_used()))
            continue
        wire.send(sock, m.Begin(where=where))
        processed = _process(doc, ref, limits)
        if ref.xref and not _left_hidden(ref, limits):
            seen.add(ref.share)
        reply = m.Image(where=where, outcome=processed.outcome, cpu=cpu_used())
        wire.send(sock, reply, processed.payload or b"")
    wire.send(sock, m.Done(page=job.page, cpu=cpu_used()))


def _left_hidden(ref: ImageRef, limits: Limits) -> bool:
    """A draw a viewer does not show, left undecoded (the deployment does not archive them):
    its record stands alone, and a shown draw of the same image is decoded for itself."""
    return bool(ref.hidden) and not limits.archive_hidden

"""Finding the images every page draws, for planning, confined like the decoders.

The walk interprets each page's content streams, forms, patterns, glyph procedures and
annotations (`drawn`), and a hostile file can make that as costly as a decode: a colour profile
or font that inflates to gigabytes, hundreds of thousands of form fields, forms that fan out
exponentially. So it runs in one forked child under the decoders' confinement (address space,
CPU, no descriptors but its socket, no environment), with a wall-clock deadline, and its own
limits (`drawn.MAX_INVOCATIONS`, `drawn.MAX_NESTING`). The parent reads only JSON from it.

A page whose walk hits a limit ends the walk with a reason that names the page
(`WalkFailed`): `walk_limit_exceeded`, `memory_limit`, `walk_timeout` (CPU or wall time),
`too_many_images`, or `inspection_failed`; staging refuses the report with it. Nothing is
archived for a report whose pages cannot all be accounted for. A stream nested deeper than
`drawn.MAX_NESTING` is not such a limit: it is not run, and its page is damaged
(`breaks.TOO_DEEP`), accounted for like a page whose stream broke off.
"""

from __future__ import annotations

import os
import re
import selectors
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from pymupdf import mupdf

from report_pipeline.core.draws import breaks
from report_pipeline.core.draws.drawn import MAX_INVOCATIONS, WalkLimit, allocation_failed
from report_pipeline.core.draws.operators import cut_off, inline_images
from report_pipeline.core.model.records import PageStreams
from report_pipeline.core.model.settings import DecodeSettings
from report_pipeline.core.pdf.pages import (
    MAX_DRAWS_PER_REPORT,
    Draws,
    TooManyImages,
    compact,
    expand,
    walk_page,
)
from report_pipeline.core.pdf.reopening import Reopening
from report_pipeline.core.sandbox import wire
from report_pipeline.core.sandbox.child import Child, Confinement, ended, spawn


class WalkFailed(Exception):
    """A page's walk could not finish: a stable reason and a message that names the page."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason, self.message = reason, message


@wire.message("page_walked")
class PageWalked:
    images: int
    pixels: int  # declared, summed over the page's draws
    streams: dict | None  # breaks.to_wire: content streams that broke off or were repaired
    unread: int  # inline images the page's content begins that MuPDF never read
    whole: int  # of those, the ones whose BI … ID … EI is complete (not cut off)
    draws: dict  # pdf.pages.compact


@wire.message("walk_stopped")
class WalkStopped:
    page: int
    reason: str
    detail: str


@dataclass(frozen=True)
class Walked:
    counts: list[tuple[int, int]]  # per page: (image draws, declared pixels)
    draws: list[Draws]  # per page: what the decoders draw without walking it again
    # page: its content streams that broke off (what followed is unknown) or were repaired
    streams: dict[int, PageStreams]
    # page: (inline images its content begins that MuPDF never read, how many of them are whole)
    unread: dict[int, tuple[int, int]]


def image_counts(path: Path, pages: int, settings: DecodeSettings) -> Walked:
    """Every page's image draws, declared pixels and broken or repaired streams, walked in a
    confined child; raises WalkFailed when a page's walk cannot finish."""
    limit = Confinement(settings.memory_bytes, max(1, int(settings.walk_cpu_seconds)))
    child = spawn(_work(path, settings.memory_bytes), limit)
    try:
        return _collect(child, pages, settings)
    except WalkFailed:  # raised once the child is reaped
        raise
    except BaseException:
        child.stop()  # anything else went wrong here: the child does not outlive it
        raise
    finally:
        child.sock.close()


def _collect(child: Child, pages: int, settings: DecodeSettings) -> Walked:
    counts: list[tuple[int, int]] = []
    draws: list[Draws] = []
    streams: dict[int, PageStreams] = {}
    unread: dict[int, tuple[int, int]] = {}
    deadline = time.monotonic() + settings.walk_seconds
    with selectors.DefaultSelector() as selector:
        selector.register(child.sock, selectors.EVENT_READ)
        while len(counts) < pages:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                child.stop()
                raise _refused(len(counts) + 1, "walk_timeout",
                               f"it took longer than {settings.walk_seconds:.0f} s")  # fmt: skip
            try:
                msg, _ = wire.receive(child.sock)
            except (OSError, ValueError, wire.ChildGone):
                status, _ = child.reap()
                if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:  # fewer pages than
                    raise WalkFailed(
                        "page_count_mismatch",  # intake counted
                        f"PDF lists {len(counts)} of its {pages} pages",
                    ) from None
                raise _refused(len(counts) + 1, *_death(status, settings)) from None
            if isinstance(msg, WalkStopped):
                child.reap()
                raise _refused(msg.page, msg.reason, msg.detail)
            counts.append((msg.images, msg.pixels))
            draws.append(expand(msg.draws))
            if msg.unread:
                unread[len(counts)] = (msg.unread, min(msg.whole, msg.unread))
            if msg.streams:
                streams[len(counts)] = breaks.from_wire(msg.streams)
    child.reap()
    return Walked(counts, draws, streams, unread)


def _refused(page: int, reason: str, detail: str) -> WalkFailed:
    return WalkFailed(reason, f"finding the images of page {page} stopped: {detail}")


def _death(status: int, settings: DecodeSettings) -> tuple[str, str]:
    how, said = ended(status)
    if how == "cpu":
        return "walk_timeout", f"it used more than {settings.walk_cpu_seconds:.0f} s of CPU"
    if how == "memory":
        return "memory_limit", "it needs more memory than the walk may use"
    return "walk_failed", f"the walk {said}"


def _work(path: Path, memory_bytes: int):
    """The child's work, run confined (sandbox.child.spawn)."""

    def run(sock: socket.socket) -> None:
        with Reopening.within(path, memory_bytes) as pages:
            _walk(sock, pages)

    return run


def _walk(sock: socket.socket, pages: Reopening) -> None:
    total = glyphs = 0
    for number in range(1, pages.doc.page_count + 1):
        doc = pages.next_page()  # reopened when earlier pages grew the child too much
        try:
            _annotations_within_limit(doc, number)
            refs, streams = walk_page(doc, number)
            unread, whole = _unread_inline_images(doc, number, refs)
        except MemoryError:
            raise
        except mupdf.FzErrorFormat as error:  # MuPDF cannot load the page (a cycle in its
            refs, streams = [], breaks.unloadable(doc, number, error)  # resources)
            unread = whole = 0
        except Exception as error:  # a limit, or whatever else MuPDF raises on a page
            reason, detail = _limit(error)
            wire.send(sock, WalkStopped(page=number, reason=reason, detail=detail))
            return
        total += len(refs)
        glyphs += sum("type3" in ref.origin.split("/") for ref in refs)
        if total > MAX_DRAWS_PER_REPORT:
            detail = f"the report draws more than {MAX_DRAWS_PER_REPORT} images"
            if glyphs:  # text set in a bitmap font (dvips's PK fonts): an image per character
                detail += f", {glyphs} of them in Type3 glyphs (text in a bitmap font)"
            wire.send(sock, WalkStopped(page=number, reason="too_many_images", detail=detail))
            return
        pixels = sum(max(0, r.width) * max(0, r.height) for r in refs)
        draws = compact([(r.origin, r.xref, r.hidden) for r in refs])
        wire.send(sock, PageWalked(images=len(refs), pixels=pixels, unread=unread, whole=whole,
                                   streams=breaks.to_wire(streams), draws=draws))  # fmt: skip


_NOT_RUN = ("Link", "Popup")  # annotations MuPDF does not load as annotations of a page


def _annotations_within_limit(doc, number: int) -> None:
    """Refuse a page that lists more annotations than the walk runs, before MuPDF loads it.
    Loading a page loads every annotation it lists and makes an appearance for each one that
    has none (a form of 300,000 such fields: 1.8 GB) before the walk could count them. Links
    and pop-ups are not loaded as annotations, so they do not count."""
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    page = mupdf.pdf_lookup_page_obj(pdf, number - 1)
    annots = mupdf.pdf_dict_get(page, mupdf.PDF_ENUM_NAME_Annots)
    listed, run = mupdf.pdf_array_len(annots), 0
    if listed <= MAX_INVOCATIONS:
        return
    for i in range(listed):
        subtype = mupdf.pdf_dict_get(mupdf.pdf_array_get(annots, i), mupdf.PDF_ENUM_NAME_Subtype)
        run += mupdf.pdf_to_name(subtype) not in _NOT_RUN
        if run > MAX_INVOCATIONS:
            raise WalkLimit("walk_limit_exceeded", f"it lists more than {MAX_INVOCATIONS} "
                            "annotations to run")  # fmt: skip


_INLINE = re.compile(rb"(?<![^\s\]>)}])BI\s")  # the BI operator, as a token


def _unread_inline_images(doc, number: int, refs: list) -> tuple[int, int]:
    """Inline images the page's own content stream begins (`BI`) that MuPDF never handed over,
    and how many of them are whole. Poppler lists such an image; here it becomes a record,
    quarantined (core/steps.py), never silently absent. (Counted on the page's content only,
    where `origin` is "inline".)

    One the end of the content cuts off (the last one begun: `operators.cut_off`) is
    `truncated`; any other has its whole BI … ID … EI, and MuPDF did not read it: it could not
    load it (a colour space, filter or parameter it does not know: an inline /CalRGB, which
    needs a dictionary) and went on, or it stopped reading the content before it."""
    page = mupdf.pdf_lookup_page_obj(mupdf.pdf_document_from_fz_document(doc.this), number - 1)
    contents = mupdf.pdf_dict_get(page, mupdf.PDF_ENUM_NAME_Contents)
    # a /Contents that is neither a stream nor an array MuPDF runs as empty (an array's parts
    # that are no stream, read_contents skips as MuPDF does)
    runs = mupdf.pdf_is_stream(contents) or mupdf.pdf_is_array(contents)
    content = doc[number - 1].read_contents() if runs else b""
    read = sum(ref.origin == "inline" for ref in refs)
    if len(_INLINE.findall(content)) <= read:  # the usual case, at C speed: none unread
        return 0, 0
    # the letters may stand in a comment or a string (`% BI … EI`): only operators count
    unread = max(0, inline_images(content) - read)
    cut = unread > 0 and cut_off(content) == "inside an inline image"
    return unread, unread - cut


def _limit(error: Exception) -> tuple[str, str]:
    if isinstance(error, WalkLimit):
        return error.reason, error.detail
    if isinstance(error, TooManyImages):
        return "too_many_images", str(error)
    if allocation_failed(error):
        return "memory_limit", "it needs more memory than the walk may use"
    return "inspection_failed", f"the page could not be read ({type(error).__name__})"

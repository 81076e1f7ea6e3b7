"""Finding the images every page draws, for planning, confined like the decoders.

The walk interprets each page's content streams, forms, patterns, glyph procedures and
annotations (`drawn`), and a hostile file can make that as costly as a decode: a colour profile
or font that inflates to gigabytes, hundreds of thousands of form fields, forms that fan out
exponentially. So it runs in forked children under the decoders' confinement (address space,
CPU, no descriptors but its socket, no environment), with a wall-clock deadline, and its own
limits (`drawn.MAX_INVOCATIONS`, `drawn.MAX_NESTING`). The parent reads only JSON from them.

The pages are split into runs of consecutive pages, one child each, as many as the decoder
pool has (`DecodeSettings.pool_size`), so planning uses every core. The report's budgets stay
the report's, held in the parent: the CPU of all children together (`walk_cpu_seconds`,
polled from /proc while they run; each child's own limit is the whole budget), one wall-clock
deadline, and the draws of all pages before a page (`MAX_DRAWS_PER_REPORT`), summed in page
order. A page's own limits (its streams run, its annotations) are per page, as before. Where
/proc cannot tell a running child's CPU, one child walks every page.

A page whose walk hits a limit ends the walk with a reason that names the page
(`WalkFailed`): `walk_limit_exceeded`, `memory_limit`, `walk_timeout` (CPU or wall time),
`too_many_images`, or `inspection_failed`; staging refuses the report with it. The pages are
taken in order, so the page named is the first that cannot be accounted for, whichever child
stops first (a budget that runs out names the page that had taken the most of it). Nothing is
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
from report_pipeline.core.sandbox.child import Child, Confinement, cpu_of, ended, spawn


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
    glyphs: int  # of the page's draws, those in Type3 glyphs (said when the report's cap is passed)


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
    cpu: tuple[float, ...] = ()  # CPU seconds each child used, in page order of their ranges


def image_counts(path: Path, pages: int, settings: DecodeSettings) -> Walked:
    """Every page's image draws, declared pixels and broken or repaired streams, walked in
    confined children (one per core of the decoder pool, each a range of pages); raises
    WalkFailed when a page's walk cannot finish, naming the first such page, as one child
    walking every page in order would."""
    limit = Confinement(settings.memory_bytes, _cpu_budget(settings))
    walkers: list[_Walker] = []
    try:
        for first, last in page_ranges(pages, _children(settings, pages)):
            numbers = list(range(first, last + 1))
            walkers.append(_Walker(spawn(_work(path, settings.memory_bytes, numbers), limit),
                                   numbers))  # fmt: skip
        return _collect(walkers, pages, settings)
    finally:  # a refusal, a failure here or the walk done: no child outlives it
        for walker in walkers:
            walker.end()


def page_ranges(pages: int, children: int) -> list[tuple[int, int]]:
    """`pages` split into `children` runs of consecutive pages (first, last), as even as can be;
    one (1, 0) when there are none. A run keeps what its pages share (fonts, forms) in one
    child's document, parsed once."""
    children = max(1, min(children, pages))
    size, extra = divmod(pages, children)
    ranges, first = [], 1
    for k in range(children):
        last = first + size - 1 + (k < extra)
        ranges.append((first, last))
        first = last + 1
    return ranges


def _children(settings: DecodeSettings, pages: int) -> int:
    """One child per decoder of the pool, at most one per page; one alone where /proc cannot
    tell the parent a running child's CPU (the budget is then the child's own limit)."""
    if cpu_of(os.getpid()) is None:
        return 1
    return max(1, min(settings.pool_size(), pages))


def _cpu_budget(settings: DecodeSettings) -> int:
    """The walk's CPU seconds for the whole report: each child's own limit, and the limit of
    their sum, which the parent holds them to."""
    return max(1, int(settings.walk_cpu_seconds))


@dataclass
class _Walker:
    """The parent's side of one child: the pages it walks, in order, and how far it got."""

    child: Child
    pages: list[int]
    sent: int = 0  # pages it has reported
    cpu: float = 0.0  # CPU seconds it has used (final once it is reaped)
    status: int | None = None  # its wait status once reaped
    page_started: float = 0.0  # when (monotonic) and at what CPU it began its current page
    page_cpu: float = 0.0

    @property
    def walking(self) -> int | None:
        """The page it is on now (None when it has reported all its pages)."""
        return self.pages[self.sent] if self.sent < len(self.pages) else None

    def poll_cpu(self) -> float:
        if self.status is None:
            self.cpu = max(self.cpu, self.child.cpu() or 0.0)
        return self.cpu

    def reap(self) -> int:
        if self.status is None:
            self.status, cpu = self.child.reap()
            self.cpu = max(self.cpu, cpu)
        return self.status

    def end(self) -> None:
        if self.status is None:
            self.child.kill()
            self.reap()


def _collect(walkers: list[_Walker], pages: int, settings: DecodeSettings) -> Walked:
    """Read every child's pages, and take them in page order: the first page that cannot be
    accounted for (its child stopped or died there, or the report's draws pass their cap
    there) refuses the report, once every page before it is in, as a single walk in order
    would refuse it. The CPU budget holds for the children's sum, polled while they run;
    the wall time for the whole walk."""
    counts: list[tuple[int, int]] = []
    draws: list[Draws] = []
    streams: dict[int, PageStreams] = {}
    unread: dict[int, tuple[int, int]] = {}
    walked: dict[int, PageWalked] = {}  # pages in, not yet taken in order
    stopped: dict[int, tuple[str, str]] = {}  # page: why its child could not account for it
    total = glyphs = 0
    budget = _cpu_budget(settings)
    started = time.monotonic()
    deadline = started + settings.walk_seconds
    for walker in walkers:
        walker.page_started = started
    with selectors.DefaultSelector() as selector:
        for walker in walkers:
            selector.register(walker.child.sock, selectors.EVENT_READ, walker)
        while len(counts) < pages:
            page = len(counts) + 1
            if page in walked:
                msg = walked.pop(page)
                total, glyphs = total + msg.images, glyphs + msg.glyphs
                if total > MAX_DRAWS_PER_REPORT:
                    raise _refused(page, "too_many_images", _too_many(glyphs))
                counts.append((msg.images, msg.pixels))
                draws.append(expand(msg.draws))
                if msg.unread:
                    unread[page] = (msg.unread, min(msg.whole, msg.unread))
                if msg.streams:
                    streams[page] = breaks.from_wire(msg.streams)
                continue
            if page in stopped:
                raise _refused(page, *stopped[page])
            if sum(walker.poll_cpu() for walker in walkers) > budget:
                raise _refused(_busiest(walkers, cpu=True), *_out_of_cpu(settings))
            now = time.monotonic()
            if now >= deadline:
                raise _refused(_busiest(walkers, cpu=False), "walk_timeout",
                               f"it took longer than {settings.walk_seconds:.0f} s")  # fmt: skip
            for key, _ in selector.select(timeout=min(_POLL, deadline - now)):
                walker = key.data
                if _read(walker, walked, stopped, pages, settings):
                    selector.unregister(walker.child.sock)
    for walker in walkers:  # each has reported all its pages: it is ending
        walker.reap()
    if sum(walker.cpu for walker in walkers) > budget:  # past it since the last look
        raise _refused(max(walkers, key=lambda w: w.cpu).pages[-1], *_out_of_cpu(settings))
    return Walked(counts, draws, streams, unread, tuple(walker.cpu for walker in walkers))


_POLL = 0.05  # seconds between looks at the children's CPU while no page comes in


def _read(walker: _Walker, walked: dict, stopped: dict, pages: int, settings: DecodeSettings,
          ) -> bool:  # fmt: skip
    """One message from `walker`'s child; True once it has nothing more to say (it stopped,
    ended or died: reaped, and the page it was on, if any, marked with why)."""
    try:
        msg, _ = wire.receive(walker.child.sock)
        if not isinstance(msg, PageWalked | WalkStopped) or walker.walking is None:
            raise wire.BadMessage("a message the walk did not ask for")
    except wire.ChildGone:  # it ended: its exit says how
        _ended(walker, walker.reap(), stopped, pages, settings)
        return True
    except (OSError, ValueError):  # a child that says what it should not is not heard further
        walker.end()
        _ended(walker, walker.status or 0, stopped, pages, settings)
        return True
    if isinstance(msg, WalkStopped):
        stopped[walker.walking] = (msg.reason, msg.detail)
        walker.end()
        return True
    walked[walker.walking] = msg
    walker.sent += 1
    walker.page_started, walker.page_cpu = time.monotonic(), walker.poll_cpu()
    return False


def _ended(walker: _Walker, status: int, stopped: dict, pages: int, settings: DecodeSettings,
           ) -> None:  # fmt: skip
    page = walker.walking
    if page is None:  # it had reported all its pages
        return
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:  # its document has fewer pages
        stopped[page] = ("page_count_mismatch", f"PDF lists {page - 1} of its {pages} pages")
    else:
        stopped[page] = _death(status, settings)


def _busiest(walkers: list[_Walker], cpu: bool) -> int:
    """The page a budget ran out on: of the pages being walked, the one that has taken the
    longest so far (CPU, or wall time); with one child, the page it was on."""
    busy = [w for w in walkers if w.walking is not None and w.status is None]
    if not busy:
        busy = [w for w in walkers if w.walking is not None] or walkers
    if cpu:
        walker = max(busy, key=lambda w: w.poll_cpu() - w.page_cpu)
    else:
        walker = min(busy, key=lambda w: w.page_started)
    return walker.walking or 1


def _too_many(glyphs: int) -> str:
    detail = f"the report draws more than {MAX_DRAWS_PER_REPORT} images"
    if glyphs:  # text set in a bitmap font (dvips's PK fonts): an image per character
        detail += f", {glyphs} of them in Type3 glyphs (text in a bitmap font)"
    return detail


def _refused(page: int, reason: str, detail: str) -> WalkFailed:
    return WalkFailed(reason, f"finding the images of page {page} stopped: {detail}")


def _out_of_cpu(settings: DecodeSettings) -> tuple[str, str]:
    return "walk_timeout", f"it used more than {settings.walk_cpu_seconds:.0f} s of CPU"


def _death(status: int, settings: DecodeSettings) -> tuple[str, str]:
    how, said = ended(status)
    if how == "cpu":
        return _out_of_cpu(settings)
    if how == "memory":
        return "memory_limit", "it needs more memory than the walk may use"
    return "walk_failed", f"the walk {said}"


def _work(path: Path, memory_bytes: int, numbers: list[int]):
    """The child's work, run confined (sandbox.child.spawn): walk pages `numbers`, in order."""

    def run(sock: socket.socket) -> None:
        with Reopening.within(path, memory_bytes) as pages:
            _walk(sock, pages, numbers)

    return run


def _walk(sock: socket.socket, pages: Reopening, numbers: list[int]) -> None:
    total = 0
    patterned: dict[int, bool] = {}  # resources known to reach no pattern (`drawn.page_draws`)
    for number in numbers:
        if number > pages.doc.page_count:  # fewer pages than intake counted: the parent says so
            return
        doc = pages.next_page()  # reopened when earlier pages grew the child too much
        try:
            _annotations_within_limit(doc, number)
            refs, streams = walk_page(doc, number, patterned)
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
        glyphs = sum("type3" in ref.origin.split("/") for ref in refs)
        pixels = sum(max(0, r.width) * max(0, r.height) for r in refs)
        draws = compact([(r.origin, r.xref, r.hidden, r.defaults) for r in refs])
        wire.send(sock, PageWalked(images=len(refs), pixels=pixels, unread=unread, whole=whole,
                                   streams=breaks.to_wire(streams), draws=draws,
                                   glyphs=glyphs))  # fmt: skip
        total += len(refs)
        if total > MAX_DRAWS_PER_REPORT:  # its pages alone pass the report's cap: the parent
            return  # refuses the report at the page where all pages before it did


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

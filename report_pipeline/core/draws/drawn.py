"""Every image a page draws, by any path, found by MuPDF's own content-stream interpreter.

A page draws images through its content stream (`Do` of an image XObject, inline `BI … ID …
EI`), through form XObjects (nested), tiling patterns and soft-mask groups (each time a paint
uses them: `paints`), Type3 glyph procedures, and the normal appearance streams of its
annotations and form fields. `DrawFinder` is a MuPDF content processor that records each of
them, in drawing order, with the path that led to it (`origin`: "xobject", "inline",
"form/xobject", "annotation/form/inline", …) and, for what a viewer does not show, why
(`hidden`: `visibility`). Nothing is decoded: image XObjects are looked up by name, inline
images are MuPDF's parsed objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.draws import defaults as colour_defaults
from report_pipeline.core.draws import tiles
from report_pipeline.core.draws.breaks import UNREADABLE, Streams, label, parts
from report_pipeline.core.draws.callbacks import entry, guarded
from report_pipeline.core.draws.clips import Clips
from report_pipeline.core.draws.paints import BASE, FRESH, Paint, Paints
from report_pipeline.core.draws.replays import Replays
from report_pipeline.core.draws.textbox import TextBoxes, paints_patterns
from report_pipeline.core.draws.type3 import Type3Glyphs
from report_pipeline.core.draws.visibility import Visibility
from report_pipeline.core.draws.xobjects import XObjects
from report_pipeline.core.model.records import PageStreams

# forms inside forms inside patterns ...: a stream deeper is not run, its page damaged
# (`breaks.TOO_DEEP`); MuPDF's renderer draws deeper, so this is the walk's bound, not MuPDF's
MAX_NESTING = 24
# Streams run for one page (forms and annotations each time they are drawn, a pattern, soft mask
# or glyph procedure once per state it paints in: `replays`; one nested too deep to run counts
# too): real pages stay in the hundreds;
# fan-outs (a form drawing the next twice, 23 deep) would keep the walk busy for minutes.
MAX_INVOCATIONS = 20_000
# MuPDF's renderer holds at most 2,048 graphics states (pdf-op-run.c, pdf_gsave): a `q` that
# would go past raises "too many nested graphics states", and the page draws nothing more, its
# annotations neither. A page's content starts 1 deep, as each annotation does (a processor of
# its own, whose `q` comes before its appearance); a form, a pattern's cell or a soft mask's
# group runs 2 deeper than where it is drawn (measured with MuPDF's drawing device); a Type3
# glyph runs in a processor of its own, and MuPDF goes on with the page when one fails, so it is
# not followed there
GSTATE_TOP = 2047
_GSTATE_START, _GSTATE_COST = 1, {"form": 2, "pattern": 2, "softmask": 2}
GSTATE_LIMIT = "too many nested graphics states"
_ALLOCATION_FAILED = ("malloc", "calloc", "realloc", "out of memory")


@dataclass(frozen=True)
class Draw:
    """One image drawn: an image XObject (xref > 0) or an inline image (MuPDF's image)."""

    origin: str
    xref: int
    inline: object = None  # mupdf.FzImage for inline images
    hidden: str = ""  # why a viewer does not show it (visibility.py); "" when shown
    defaults: str = ""  # the default colour spaces it is drawn under (draws/defaults.py spec)


class TooManyDraws(Exception):
    """A page draws more images than the limit allows."""


class WalkLimit(Exception):
    """Finding a page's images stopped at a limit: the page cannot be accounted for."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


class DrawFinder(
    XObjects, Visibility, Clips, Paints, TextBoxes, Type3Glyphs, Replays, mupdf.PdfProcessor2
):
    def __init__(self, doc: mupdf.PdfDocument, limit: int) -> None:
        super().__init__()
        for op in ("push_resources", "pop_resources", "op_Do_image", "op_Do_form", "op_BI",
                   "op_Tf"):  # fmt: skip
            getattr(self, f"use_virtual_{op}")()
        self.doc, self.limit = doc, limit
        self.draws: list[Draw] = []
        self.path: list[str] = []
        self.active: list[int] = []  # xrefs of the streams being run: cycles are skipped
        self.resources: list[mupdf.PdfObj] = []  # MuPDF's resource stack, innermost last
        self.floor = 0  # where a name's lookup stops: a Type3 glyph runs on a stack of its own
        self.overflow = False
        self.streams = Streams()  # which content streams broke off (core/draws/breaks.py)
        self.invocations = 0
        self.stopped: tuple[str, str] | None = None  # (reason, detail) once a limit is hit
        self.cookie = mupdf.FzCookie()  # shared by every stream run: aborting it stops them all
        # how deep MuPDF's renderer's graphics states are where the running stream began
        # (`gtop` adds the stream's own q's, GSTATE_TOP)
        self.gbase = _GSTATE_START
        self.gpeak = self.gtop  # the deepest they went in the run being kept (`replays`)
        self.gstate_top = GSTATE_TOP
        self.aborted = False  # MuPDF's renderer stops drawing the page here (GSTATE_TOP)
        self.jbig2_globals: dict[int, bool] = {}  # whether MuPDF decodes each (`xobjects`)
        self.current: list[list[mupdf.PdfObj]] = []  # the streams running, innermost last
        # the default colour spaces in effect (MuPDF's renderer's), set for the page
        self.colour: colour_defaults.InEffect | None = None
        self.page_colour: colour_defaults.InEffect | None = None

    def stop(self, reason: str, detail: str) -> None:
        """End the page's walk at a limit: MuPDF's interpreter stops at its next operator."""
        if self.stopped is None:
            self.stopped = (reason, detail)
        self.cookie.set_abort()

    # -- graphics states ---------------------------------------------------------------------
    @guarded
    def op_q(self, ctx) -> None:
        if self.gtop >= GSTATE_TOP and "type3" not in self.path:
            self.abort_page(f"MuPDF stops drawing the page at it: {GSTATE_LIMIT} (over "
                            f"{GSTATE_TOP + 1:,})")  # fmt: skip
            return
        super().op_q(ctx)
        self.gpeak = max(self.gpeak, self.gtop)

    @property
    def gtop(self) -> int:
        """How deep MuPDF's renderer's graphics states are now: where the running stream began,
        and a state for each `q` of its not yet restored (`Paints.saved_paints`)."""
        return self.gbase + len(self.saved_paints)

    def abort_page(self, what: str) -> None:
        """MuPDF's renderer raises out of the page here: the running stream breaks off and
        nothing after it is drawn, on the page or by its annotations."""
        if not self.aborted:
            self.aborted = True
            streams = self.current[-1] if self.current else []
            self.streams.broken_here(label(self.path, streams), streams, UNREADABLE, what,
                                     len(self.draws))  # fmt: skip
        self.cookie.set_abort()

    # -- resources ---------------------------------------------------------------------------
    @guarded
    def push_resources(self, ctx, res) -> None:
        self.resources.append(mupdf.PdfObj(mupdf.ll_pdf_keep_obj(res)))

    @guarded
    def pop_resources(self, ctx):
        if self.resources:
            self.resources.pop()
        return None

    def _lookup(self, kind: str, name: str) -> mupdf.PdfObj | None:
        """The resource `name` of `kind`, as MuPDF's interpreter finds it
        (`pdf_lookup_resource`): in the innermost resources, else in each one around them, so
        a form or pattern whose own resources lack a name draws what its caller's (or the
        page's) name. A Type3 glyph's procedure runs in a processor of its own with the font's
        resources only (`floor`)."""
        for resources in reversed(self.resources[self.floor :]):
            if (found := entry(mupdf.pdf_dict_gets(resources, kind), name)) is not None:
                return found
        return None

    # -- what is drawn ---------------------------------------------------------------------
    def _record(self, kind: str, xref: int, inline: object = None) -> None:
        if self.aborted:  # MuPDF raised out of the page in this operator (its soft mask's run)
            return
        if len(self.draws) >= self.limit:
            self.overflowed()
            return
        spec = self.colour.spec if self.colour is not None else ""
        self.draws.append(Draw("/".join([*self.path, kind]), xref, inline, self.hidden, spec))

    def overflowed(self) -> None:
        """One draw past the page's cap: the page is refused (`too_many_images`) whatever else
        it draws, so MuPDF's interpreter stops at its next operator."""
        self.overflow = True
        self.cookie.set_abort()

    # -- running streams -------------------------------------------------------------------
    def run(
        self, kind: str, stream: mupdf.PdfObj, resources: mupdf.PdfObj | None = None,
        paint: Paint | None = None, font: tuple | None = None,
    ) -> None:  # fmt: skip
        """Interpret `stream` (a form, pattern, soft mask or glyph) with its own resources,
        falling back to the current ones, as MuPDF's renderer does, and with `paint` for its
        graphics state (None: a copy of the current one; for a glyph, a fresh one, as MuPDF
        renders a glyph into its cache: `type3`) and `font` (the font and whether one is set;
        None: the current one; a glyph has none). One that is not a stream (a dictionary, direct
        or by reference) draws nothing: MuPDF fails to open it and goes on with the next
        operator, having lost nothing it could draw."""
        number = mupdf.pdf_to_num(stream)
        if self.overflow or self.stopped or self.aborted:
            return
        if number and number in self.active:  # a form met inside itself: skipped, as MuPDF
            if kind == "pattern":  # skips it; a pattern: MuPDF paints it again and again
                self.pattern_cycle(number, stream)
            return
        if not mupdf.pdf_is_stream(stream):  # a dictionary without content: MuPDF runs nothing
            return
        if len(self.path) >= MAX_NESTING:  # not run: what it draws is unknown (`breaks`);
            if self.invoke():  # counted as a run, so a page cannot ask for them without bound
                self.streams.too_deep(number, self.path, kind, stream, len(self.draws))
            return
        if resources is None or not resources.m_internal:
            resources = mupdf.pdf_dict_get(stream, mupdf.PDF_ENUM_NAME_Resources)
        if not resources.m_internal and self.resources:
            resources = self.resources[-1]
        inner = FRESH if kind == "type3" and paint is None else paint or self.paint
        start = (None, False) if kind == "type3" else font or (self.font, self.fonted)
        # the state a pattern selected inside starts from (`paints`: MuPDF's "gparent"): for a
        # pattern's cell, the one it paints in; for anything else, its own first state
        text_base = (self.paint.render, self.font, self.fonted) if kind == "pattern" else (
            inner.render, *start)  # fmt: skip
        key = self.replay_key(kind, stream, resources, inner, start, text_base)
        if self.replayed(key) or not self.invoke():  # drawn before in this state: no run
            return
        if kind in ("form", "softmask"):  # MuPDF clips to its box: a path of its own, painted
            self.path_ops, self.begun = [], False
            if inner.ctm is not None:  # its /Matrix, then the ctm
                inner = replace(inner, ctm=tiles.concat(xobject_matrix(stream), inner.ctm))
        kept = (stream, resources, inner, self.font, start, text_base, tuple(self.resources))
        with self.recorded(key, kept):
            self._run(kind, number, stream, resources, inner, start, text_base)

    def _run(
        self, kind: str, number: int, stream, resources, paint: Paint, font: tuple,
        text_base: tuple,
    ) -> None:  # fmt: skip
        """Run `stream` in a graphics state of its own, as MuPDF saves and restores it: what it
        sets (paint, text, font) and an unbalanced Q inside it stay inside it."""
        outer = (self.paint, self.saved_paints, self.text, self.text_draws, self.font,
                 self.fonted, self.saved_fonts, self.base, self.text_base, self.gbase,
                 self.clips, self.saved_clips, self.clipping, self.colour)  # fmt: skip
        if kind == "form" and self.colour is not None:  # pdf_run_xobject's update
            self.colour = colour_defaults.updated(self.colour, resources)
        elif kind in ("type3", "softmask") and self.colour is not None:  # drawn without them
            self.colour = colour_defaults.glyph_defaults(self.colour, kind == "softmask")
        self.saved_clips, self.clipping = [], False
        self.gbase = 1 if kind == "type3" else self.gtop + _GSTATE_COST.get(kind, 0)
        self.paint, self.saved_paints, self.text, self.text_draws = paint, [], None, []
        self.gpeak = max(self.gpeak, self.gtop)
        (self.font, self.fonted), self.saved_fonts, self.text_base = font, [], text_base
        self.base = paint.ctm  # MuPDF's "gparent": what a pattern selected in it is based on
        self.path.append(kind)
        self.active.append(number)
        floor, self.floor = self.floor, len(self.resources) if kind == "type3" else self.floor
        # MuPDF runs a glyph in a processor of its own, and a soft mask saving the text matrix
        separate = self.boxing and kind in ("type3", "softmask")
        text_object = self.save_text_object() if separate else None
        if separate and kind == "type3":
            self.reset_text_object()
        try:
            if kind in ("form", "softmask"):  # MuPDF clips to its box (`clips`)
                self._clip()
            if not self.aborted:
                self.running([stream], lambda: self.interpret(resources, stream))
        finally:
            if text_object is not None:
                self.restore_text_object(text_object)
            self.floor = floor
            self.active.pop()
            self.path.pop()
            (self.paint, self.saved_paints, self.text, self.text_draws, self.font, self.fonted,
             self.saved_fonts, self.base, self.text_base, self.gbase, self.clips,
             self.saved_clips, self.clipping, self.colour) = outer  # fmt: skip

    def pattern_cycle(self, number: int, stream: mupdf.PdfObj) -> None:
        """Pattern `stream` is painted inside its own cell: MuPDF's renderer runs it again until
        its exception stack runs out. A soft mask's group or a Type3 glyph catches that error
        (what it drew is unknown: `breaks.Streams.cycle`, the walk goes on); anywhere else it
        raises out of the page, and nothing after it is drawn. Hidden (optional content off),
        MuPDF paints nothing, and the cycle is skipped as a form's."""
        if self.hidden:
            return
        if "softmask" in self.path or "type3" in self.path:
            self.streams.cycle(number, self.path, stream, len(self.draws))
        else:
            self.abort_page(
                "MuPDF stops drawing the page at it: a pattern painted inside its "
                "own cell, which it paints again until its exception stack runs out"
            )

    def invoke(self) -> bool:
        """Count one more stream run (a form, pattern, glyph procedure or annotation); False,
        and the walk stopped, past MAX_INVOCATIONS."""
        self.invocations += 1
        if self.invocations > MAX_INVOCATIONS:
            self.stop("walk_limit_exceeded", f"it runs more than {MAX_INVOCATIONS} forms, "
                      "patterns, glyph procedures or annotations")  # fmt: skip
        return self.stopped is None

    def interpret(self, resources: mupdf.PdfObj, stream: mupdf.PdfObj) -> None:
        mupdf.pdf_process_contents(self, self.doc, resources, stream, self.cookie)

    def running(self, streams: list[mupdf.PdfObj], call) -> None:
        """`call` runs `streams` (a page's content, a form, an annotation's appearance): what
        MuPDF says meanwhile, and raises, is theirs to be judged by (`breaks.Streams`)."""
        self.streams.enter()
        self.current.append(streams)
        raised = ""
        try:
            raised = self.process(call)
        finally:
            self.current.pop()
            self.streams.leave(label(self.path, streams), streams, len(self.draws), raised)

    def process(self, call) -> str:
        """What MuPDF raised out of `call` ("": nothing): a broken stream stops where MuPDF's
        renderer stops too; what it drew before counts. An allocation that failed (a colour
        profile or font inflating past the memory limit) is not a broken stream: the rest of
        the page was never looked at."""
        try:
            call()
        except mupdf.FzErrorBase as error:
            if not allocation_failed(error):
                return str(error)
            self.stop("memory_limit", "it needs more memory than the walk may use")
        return ""


def allocation_failed(error: Exception) -> bool:
    """MuPDF's error for an allocation that failed (under a confined child's address space)."""
    return any(word in str(error).lower() for word in _ALLOCATION_FAILED)


def page_draws(
    doc: pymupdf.Document, page_number: int, limit: int, patterned: dict | None = None
) -> tuple[list[Draw], PageStreams]:
    """Every image the page draws (1-based page number), in order, and which of its content
    streams broke off or were repaired (`breaks`): what a broken stream would have drawn after
    the break is unknown. Raises TooManyDraws past `limit` draws. Text is laid out for the box a
    tiling pattern paints it over only on a page that can paint one (`textbox`; `patterned`
    keeps what is known of the document's resources, from page to page)."""
    pymupdf.TOOLS.reset_mupdf_warnings()
    page = doc[page_number - 1]
    pdf_page = mupdf.pdf_page_from_fz_page(page.this)
    finder = DrawFinder(pdf_page.doc(), limit)
    try:
        return _page_draws(finder, page_number, pdf_page, patterned)
    finally:
        finder.drop_kept_fonts()


def _page_draws(
    finder: DrawFinder, page_number: int, pdf_page: mupdf.PdfPage, patterned: dict | None
) -> tuple[list[Draw], PageStreams]:
    limit = finder.limit
    if paints_patterns(pdf_page, {} if patterned is None else patterned):
        finder.follow_text_boxes()
    start = replace(FRESH, ctm=page_transform(pdf_page))  # as fz_run_page starts a page
    finder.paint = start
    finder.base = start.ctm
    contents, resources = mupdf.pdf_page_contents(pdf_page), mupdf.pdf_page_resources(pdf_page)
    # under everything the page runs, its resources: MuPDF's renderer looks a name up in them
    # when a form's, a pattern's or an annotation's appearance's own resources lack it
    mupdf.pdf_processor_push_resources(finder, resources)
    finder.colour = finder.page_colour = colour_defaults.page_defaults(pdf_page)
    if contents.m_internal:
        _run_page(finder, resources, contents)
    for annot in _annotations(pdf_page):
        if finder.aborted or not finder.invoke():
            break
        finder.gbase = _GSTATE_START  # saved_paints starts empty (below)
        finder.reset_clips([])
        finder.path.append("annotation")
        finder.colour = finder.page_colour  # pdf_run_annot loads the page's again
        finder.paint, finder.saved_paints, finder.text, finder.text_draws = start, [], None, []
        finder.font, finder.fonted, finder.saved_fonts, finder.text_base = None, False, [], BASE
        finder.reset_text_object()
        try:
            finder.annotation(annot)
        finally:
            finder.path.pop()
    finder.running([], lambda: mupdf.pdf_close_processor(finder))
    mupdf.pdf_processor_pop_resources(finder)
    if finder.overflow:
        raise TooManyDraws(f"page {page_number} draws more than {limit} images")
    if finder.stopped:
        raise WalkLimit(*finder.stopped)
    return finder.draws, finder.streams.verdicts()


def page_transform(pdf_page: mupdf.PdfPage) -> tiles.Matrix:
    """The page's base transform, to the device space of fz_run_page with the identity."""
    ctm = mupdf.FzMatrix()
    mupdf.pdf_page_transform(pdf_page, mupdf.FzRect(), ctm)
    return (ctm.a, ctm.b, ctm.c, ctm.d, ctm.e, ctm.f)


def xobject_matrix(xobject: mupdf.PdfObj) -> tiles.Matrix:
    """A form's /Matrix as MuPDF reads it (pdf_xobject_matrix: the identity when there is none)."""
    m = mupdf.pdf_dict_get_matrix(xobject, mupdf.PDF_ENUM_NAME_Matrix)
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _run_page(finder: DrawFinder, resources: mupdf.PdfObj, contents: mupdf.PdfObj) -> None:
    """The page's content, in a state MuPDF saved before it: one `Q` too many restores that
    first state (no pattern, soft mask or font; the page's transform); any more are ignored, as
    in a form."""
    finder.saved_paints, finder.saved_fonts = [finder.paint], [(None, False)]
    finder.gbase = _GSTATE_START - 1  # the state saved before the page counts as its first
    finder.reset_clips([0])
    finder.running(
        parts(contents),
        lambda: mupdf.pdf_process_contents(finder, finder.doc, resources, contents, finder.cookie),
    )


def _annotations(pdf_page: mupdf.PdfPage) -> Iterator[mupdf.PdfAnnot]:
    for first, following in (
        (mupdf.pdf_first_annot, mupdf.pdf_next_annot),
        (mupdf.pdf_first_widget, mupdf.pdf_next_widget),
    ):
        annot = first(pdf_page)
        while annot.m_internal:
            yield annot
            annot = following(annot)

"""One record per paint: a tiling pattern or a soft mask draws its images each time a paint uses
it, as MuPDF's renderer runs them, never when it is only selected.

MuPDF runs a tiling pattern's content when a fill or stroke paints with it (a path, the glyphs
of a text object as they are flushed, a stencil image mask), not when `scn` selects it; and an
ExtGState's soft mask (`/SMask` with a group `/G`) when a paint happens under it: a path, a text
flush, an image without a mask of its own, a shading, a transparency group (once, around its
content). So a pattern painted three times is three records of its image, one selected and
never used is none, and a soft mask over three fills is three (`core/test_paints.py` compares
with MuPDF's drawing device).

The graphics state that decides it (`Paint`) is saved and restored by q/Q, and each stream runs
with a state of its own, as MuPDF runs it: a form with a copy of the current one, a pattern or
a soft mask without the soft mask (and a pattern without the material it paints), a glyph or an
annotation with a fresh one. A pattern's cell shows its text in the text state (mode, font) the
stream that selected it started with (MuPDF's "gparent": for a page, mode 0 and no font), not
the current one (`base`). A page runs in a state MuPDF saved first: one `Q` too many restores
it. Text shown with no font selected is nothing MuPDF paints. Paint and colour operators call
back into Python only once the page selects a pattern or a soft mask: before that, no paint can
run anything. A Type3 font's glyphs are text of their own (`type3`): each glyph's draws go with
the text that paints it (`text_draws`), and MuPDF may make that text invisible (`hide_text`).

A mixin for `drawn.DrawFinder`, which provides `run`, `resources` and `_lookup`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pymupdf import mupdf

from report_pipeline.core.pdf.callbacks import guarded
from report_pipeline.core.pdf.type3 import UNPAINTED

Stream = tuple[mupdf.PdfObj, mupdf.PdfObj | None]  # a pattern or mask group, and its resources
# the text state a stream starts with, or a pattern runs with: mode (Tr), font, a font is set
TextState = tuple[int, mupdf.PdfObj | None, bool]
BASE: TextState = (0, None, False)  # a page's, an annotation's, a glyph's
Pattern = tuple[mupdf.PdfObj, mupdf.PdfObj | None, TextState]  # with the text state it runs in
_FILLS, _STROKES = {0, 2, 4, 6}, {1, 2, 5, 6}  # text rendering modes that fill, that stroke
# ExtGState entries MuPDF's renderer changes state for, flushing the text shown before
_FLUSHED_BY = ("LW", "LC", "LJ", "ML", "D", "RI", "CA", "ca", "BM", "SMask", "OP", "op", "OPM",
               "UseBlackPtComp")  # fmt: skip
# called back once a pattern or soft mask is set: paints, and what flushes text or sets colour
_FOLLOWED = ("op_S", "op_s", "op_F", "op_f", "op_fstar", "op_B", "op_Bstar", "op_b", "op_bstar",
             "op_sh", "op_ET", "op_cm", "op_w", "op_j", "op_J", "op_M", "op_d", "op_ri",
             "op_cs", "op_CS", "op_sc_color", "op_SC_color", "op_sc_shade", "op_SC_shade",
             "op_g", "op_G", "op_rg", "op_RG", "op_k", "op_K", "op_MP", "op_DP",
             "op_END")  # fmt: skip


@dataclass(frozen=True)
class Paint:
    """What a paint runs besides itself."""

    fill: Pattern | None = None  # the tiling pattern fills paint with
    stroke: Pattern | None = None  # the tiling pattern strokes paint with
    softmask: Stream | None = None  # the soft mask's group, set by `gs`
    render: int = 0  # the text rendering mode (Tr)


FRESH = Paint()


class Paints:
    paint: Paint = FRESH
    base: TextState = BASE  # the text state the stream being run started with

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.saved_paints: list[Paint] = []
        self.text: int | None = None  # rendering mode of text shown and not yet painted
        # where that text's Type3 glyphs put their draws (they paint with it: `hide_text`)
        self.text_draws: list[tuple[int, int]] = []
        self.following = False
        for op in ("op_q", "op_Q", "op_Tr", "op_gs_SMask", "op_sc_pattern", "op_SC_pattern"):
            getattr(self, f"use_virtual_{op}")()

    def _follow(self) -> None:
        if not self.following:
            self.following = True
            for op in _FOLLOWED:
                getattr(self, f"use_virtual_{op}")()
            self._follow_text()  # Type3Glyphs: text operators call back too

    # -- what runs when something paints ----------------------------------------------------
    def mask_paint(self) -> None:
        """A paint under a soft mask runs the mask's group first (MuPDF's pdf_begin_group)."""
        if self.paint.softmask is not None:
            group, resources = self.paint.softmask
            self.run("softmask", group, resources, replace(self.paint, softmask=None))

    def painted(self, fill: bool = False, stroke: bool = False) -> None:
        self.mask_paint()
        self.pattern_paint(fill, stroke)

    def pattern_paint(self, fill: bool, stroke: bool) -> None:
        for used, which in ((fill, "fill"), (stroke, "stroke")):
            pattern = getattr(self.paint, which) if used else None
            if pattern is not None:
                obj, resources, (render, *font) = pattern
                uncolored = mupdf.pdf_dict_get_int(obj, mupdf.PDF_ENUM_NAME_PaintType) == 2
                inner = replace(self.paint, softmask=None, render=render, **{which: None})
                if uncolored:  # drawn in the colour of the paint: neither material is a pattern
                    inner = replace(inner, fill=None, stroke=None)
                self.run("pattern", obj, resources, inner, tuple(font))

    def flush_text(self) -> None:
        """The text shown since the last flush is painted now, in the mode it was shown in."""
        mode, self.text, self.text_draws = self.text, None, []
        if mode is not None and (mode in _FILLS or mode in _STROKES):
            self.painted(mode in _FILLS, mode in _STROKES)

    def hide_text(self) -> None:
        """The text shown since the last flush becomes invisible, as MuPDF makes it when a
        coloured Type3 glyph is filled with a pattern (`type3`): it paints nothing, and the
        Type3 glyphs in it draw nothing."""
        for start, stop in reversed(self.text_draws):
            del self.draws[start:stop]
        self.text, self.text_draws = 3, []

    def _show(self, codes: bytes) -> None:  # Type3Glyphs calls it for every string shown
        if codes and self.fonted:  # no font: MuPDF shows nothing ("font and size not set")
            if self.text is not None and self.text != self.paint.render:
                self.flush_text()  # MuPDF flushes when the rendering mode changes
            # a Type3 font's glyphs make their own text, glyph by glyph (`type3`)
            if self.font is None or self.paint.render in UNPAINTED:
                self.text = self.paint.render
        super()._show(codes)

    # -- the state ---------------------------------------------------------------------------
    def _set(self, **changes) -> None:
        self.flush_text()  # MuPDF paints the text shown before any change of state
        self.paint = replace(self.paint, **changes)

    def _stream(self, obj: mupdf.PdfObj) -> Stream:
        """`obj` with the resources it runs with: its own, else those current now."""
        own = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Resources)
        return obj, own if own.m_internal else (self.resources[-1] if self.resources else None)

    @guarded
    def op_q(self, ctx) -> None:
        self.saved_paints.append(self.paint)
        super().op_q(ctx)

    @guarded
    def op_Q(self, ctx) -> None:
        self.flush_text()
        if self.saved_paints:  # at the base of a stream, MuPDF ignores an unbalanced Q
            self.paint = self.saved_paints.pop()
        super().op_Q(ctx)

    @guarded
    def op_Tr(self, ctx, render) -> None:
        self.paint = replace(self.paint, render=render)

    @guarded
    def op_gs_SMask(self, ctx, smask, cs, bc, luminosity, tr) -> None:
        group = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(smask)) if smask is not None else None
        self._set(softmask=self._stream(group) if group and group.m_internal else None)
        if self.paint.softmask is not None:
            self._follow()

    @guarded
    def op_gs_begin(self, ctx, name, extgstate) -> None:
        state = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(extgstate))
        if any(mupdf.pdf_dict_gets(state, key).m_internal for key in _FLUSHED_BY):
            self.flush_text()
        super().op_gs_begin(ctx, name, extgstate)

    @guarded
    def op_sc_pattern(self, ctx, name, pat, n, color) -> None:
        self._pattern("fill", name)

    @guarded
    def op_SC_pattern(self, ctx, name, pat, n, color) -> None:
        self._pattern("stroke", name)

    def _pattern(self, which: str, name: str) -> None:
        pattern = self._lookup("Pattern", name)
        tiling = pattern and mupdf.pdf_dict_get_int(pattern, mupdf.PDF_ENUM_NAME_PatternType) == 1
        # its text state is that of the stream it is selected in, as it started (MuPDF's
        # "gparent"): its cell's text shows in that mode and font, not the current ones
        self._set(**{which: (*self._stream(pattern), self.base) if tiling else None})
        if tiling:
            self._follow()

    # -- operators followed once a pattern or soft mask is set -------------------------------
    @guarded
    def op_f(self, ctx) -> None:
        self.painted(fill=True)

    @guarded
    def op_S(self, ctx) -> None:
        self.painted(stroke=True)

    @guarded
    def op_B(self, ctx) -> None:
        self.painted(fill=True, stroke=True)

    op_F = op_fstar = op_f
    op_s = op_S
    op_Bstar = op_b = op_bstar = op_B

    @guarded
    def op_sh(self, ctx, name, shade) -> None:
        self.mask_paint()

    @guarded
    def op_cs(self, ctx, *args) -> None:  # any colour space: no pattern until `scn` names one
        self._set(fill=None)

    @guarded
    def op_CS(self, ctx, *args) -> None:
        self._set(stroke=None)

    op_g = op_rg = op_k = op_sc_shade = op_cs
    op_G = op_RG = op_K = op_SC_shade = op_CS

    @guarded
    def op_ET(self, ctx, *args) -> None:  # and every change of state that flushes text
        self.flush_text()

    op_cm = op_w = op_j = op_J = op_M = op_d = op_ri = op_ET
    op_sc_color = op_SC_color = op_MP = op_DP = op_END = op_ET

"""One record per paint: a tiling pattern or a soft mask draws its images each time a paint uses
it, as MuPDF's renderer runs them, never when it is only selected.

MuPDF runs a tiling pattern's content when a fill or stroke paints with it (a path, the glyphs
of a text object as they are flushed, a stencil image mask), not when `scn` selects it: once
for an area that spans a step of the pattern or more, else once per cell the area touches, 0
times for an area that lies on a cell boundary (a zero-area path, or a pattern whose matrix
cannot be inverted, whose cells start on the pattern space's origin: `tiles`); a pattern that
uses blending (MuPDF's pdf_pattern_uses_blending) once per cell the area touches, however
many: after a run that drew nothing, or once the page's cap is reached, the rest are not
replayed. Where the area
is known (a path filled or stroked, a stencil mask: the walk follows the transformation matrix,
the line width, join and miter limit, and the path; text, its glyphs' box as MuPDF bounds it:
`textbox`), a paint counts as many times as MuPDF runs the cell: 0, 1, 2 or 4; where it is not
(text `textbox` cannot lay out, a Type3 glyph's content, a stroke inside a pattern's cell),
once, unless a pattern matrix that cannot be inverted decides alone. And an
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
the current one (`text_base`). A page runs in a state MuPDF saved first: one `Q` too many restores
it. Text shown with no font selected is nothing MuPDF paints. Paint and colour operators call
back into Python only once the page selects a pattern or a soft mask: before that, no paint can
run anything. A Type3 font's glyphs are text of their own (`type3`): each glyph's draws go with
the text that paints it (`text_draws`), and MuPDF may make that text invisible (`hide_text`).

A mixin for `drawn.DrawFinder`, which provides `run`, `resources` and `_lookup`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pymupdf import mupdf

from report_pipeline.core.draws import tiles
from report_pipeline.core.draws.callbacks import guarded
from report_pipeline.core.draws.replays import identity
from report_pipeline.core.draws.textbox import TextParams
from report_pipeline.core.draws.tiles import Matrix, Rect
from report_pipeline.core.draws.type3 import UNPAINTED

Stream = tuple[mupdf.PdfObj, mupdf.PdfObj | None]  # a pattern or mask group, and its resources
# the text state a stream starts with, or a pattern runs with: mode (Tr), font, a font is set
TextState = tuple[int, mupdf.PdfObj | None, bool]
BASE: TextState = (0, None, False)  # a page's, an annotation's, a glyph's
Pattern = tuple[mupdf.PdfObj, mupdf.PdfObj | None, TextState]  # with the text state it runs in
TEXT = object()  # a paint's area that is not followed (a text object's glyphs): may be infinite
_COUNTED = 50_000  # cell counts kept per page before they are forgotten
_FILLS, _STROKES = {0, 2, 4, 6}, {1, 2, 5, 6}  # text rendering modes that fill, that stroke
# ExtGState entries MuPDF's renderer changes state for, flushing the text shown before
_FLUSHED_BY = ("LW", "LC", "LJ", "ML", "D", "RI", "CA", "ca", "BM", "SMask", "OP", "op", "OPM",
               "UseBlackPtComp")  # fmt: skip
# called back once a pattern or soft mask is set: paints, and what flushes text or sets colour
_FOLLOWED = ("op_S", "op_s", "op_F", "op_f", "op_fstar", "op_B", "op_Bstar", "op_b", "op_bstar",
             "op_n", "op_m", "op_l", "op_c", "op_v", "op_y", "op_h", "op_re",
             "op_sh", "op_ET", "op_J", "op_d", "op_ri",
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
    ctm: Matrix | None = None  # the current transformation, to device space (None: unknown)
    line: tuple[float, int, float] | None = (1.0, 0, 10.0)  # width, join, miter limit of strokes
    # the base transform of the stream that selected each pattern (MuPDF's pattern space is
    # the pattern matrix after it), and the transformation when `gs` set the soft mask
    fill_base: Matrix | None = None
    stroke_base: Matrix | None = None
    softmask_ctm: Matrix | None = None
    # the text state that lays glyphs out (`textbox`; None: not followed, in a pattern's cell)
    text_params: TextParams | None = TextParams()


FRESH = Paint()


class Paints:
    paint: Paint = FRESH
    base: Matrix | None = None  # the base transform of the stream being run (None: unknown)
    text_base: TextState = BASE  # the text state the stream being run started with

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.saved_paints: list[Paint] = []
        self.text: int | None = None  # rendering mode of text shown and not yet painted
        # where that text's Type3 glyphs put their draws (they paint with it: `hide_text`)
        self.text_draws: list[tuple[int, int]] = []
        self.following = False
        # the path being built: its operations (None: more than are kept), whether it has begun
        self.path_ops: list[tuple] | None = []
        self.begun = False
        self.counted: dict[tuple, tuple] = {}  # cell runs, pattern space per (pattern, base, shape)
        for op in ("op_q", "op_Q", "op_Tr", "op_gs_SMask", "op_sc_pattern", "op_SC_pattern",
                   "op_cm", "op_w", "op_j", "op_M"):  # fmt: skip
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
            inner = replace(self.paint, softmask=None, ctm=self.paint.softmask_ctm)
            self.run("softmask", group, resources, inner)

    def painted(self, fill: bool = False, stroke: bool = False, shape=TEXT) -> None:
        self.mask_paint()
        self.pattern_paint(fill, stroke, shape)

    def pattern_paint(self, fill: bool, stroke: bool, shape=TEXT) -> None:
        """Run each pattern the paint uses as many times as MuPDF runs its cell for `shape`:
        ("path", its operations, ctm, line or None for a fill), ("box", a device-space box),
        None for a finite box that is not known, TEXT for one that is not followed at all."""
        for used, which in ((fill, "fill"), (stroke, "stroke")):
            pattern = getattr(self.paint, which) if used else None
            if pattern is not None:
                obj, resources, (render, *font) = pattern
                uncolored = mupdf.pdf_dict_get_int(obj, mupdf.PDF_ENUM_NAME_PaintType) == 2
                base = getattr(self.paint, f"{which}_base")
                runs, cell = self._runs(obj, base, shape)
                # the cell's strokes are MuPDF's from the selecting stream's base: not followed
                inner = replace(self.paint, softmask=None, render=render, ctm=cell, line=None,
                                text_params=None, **{which: None})  # fmt: skip
                if uncolored:  # drawn in the colour of the paint: neither material is a pattern
                    inner = replace(inner, fill=None, stroke=None)
                for _ in range(1 if runs is None else runs):  # replays after the first
                    before = len(self.draws)
                    self.run("pattern", obj, resources, inner, tuple(font))
                    if len(self.draws) == before or self.overflow or self.stopped:
                        break  # every later run draws what this one drew: nothing more

    def _runs(self, pattern: mupdf.PdfObj, base: Matrix | None, shape) -> tuple:
        """How many times MuPDF runs `pattern`'s cell for `shape` (`tiles.cells`; None: not
        known), and the pattern space's transformation (None: not known). Each is worked out
        once per distinct (pattern, base, shape): a hatch painted over thousands of cells of a
        grid repeats a few hundred shapes."""
        if base is None:
            return None, None
        key = (identity(pattern), base, shape)
        found = self.counted.get(key)
        if found is None:
            matrix, box, xstep, ystep = self._pattern_geometry(pattern)
            area = None
            if shape is not None and shape is not TEXT:
                area = tiles.path_box(*shape[1:]) if shape[0] == "path" else shape[1]
            runs = None if shape is TEXT else tiles.cells(matrix, box, xstep, ystep, base, area,
                                                          self._blending(pattern))  # fmt: skip
            found = (runs, tiles.concat(matrix, base), pattern)  # kept: its address is its key
            if len(self.counted) >= _COUNTED:
                self.counted.clear()
            self.counted[key] = found
        return found[:2]

    @staticmethod
    def _blending(pattern: mupdf.PdfObj) -> bool:
        """Whether the pattern uses blending, as MuPDF's pdf_load_pattern tells it (its
        pdf_pattern_uses_blending): then MuPDF never runs its cell as a tile, but once per cell
        the area touches; False when MuPDF cannot read its resources."""
        try:
            return bool(mupdf.ll_pdf_pattern_uses_blending(pattern.m_internal, None))
        except mupdf.FzErrorBase:
            return False

    def _pattern_geometry(self, pattern: mupdf.PdfObj) -> tuple[Matrix, Rect, float, float]:
        """The pattern's matrix, box and steps, as MuPDF reads them (pdf_load_pattern)."""
        m = mupdf.pdf_dict_get_matrix(pattern, mupdf.PDF_ENUM_NAME_Matrix)
        r = mupdf.pdf_dict_get_rect(pattern, mupdf.PDF_ENUM_NAME_BBox)
        return ((m.a, m.b, m.c, m.d, m.e, m.f), (r.x0, r.y0, r.x1, r.y1),
                mupdf.pdf_dict_get_real(pattern, mupdf.PDF_ENUM_NAME_XStep),
                mupdf.pdf_dict_get_real(pattern, mupdf.PDF_ENUM_NAME_YStep))  # fmt: skip

    # -- the path being built, for the box a paint covers ------------------------------------
    def _keep(self, op: str, *coords: float) -> None:
        """A path operation, as MuPDF's run processor builds it (one it would ignore and warn
        about, a segment with no current point, is left out)."""
        if self.path_ops is None or not (self.begun or op in ("m", "re")):
            return
        self.begun = True
        self.path_ops.append((op, *coords))
        if len(self.path_ops) > tiles.MAX_PATH_OPS:
            self.path_ops = None

    def _shape(self, *materials: Stream | None, stroked: bool = False):
        """The path painted with `materials`, for MuPDF's box (`tiles.path_box`): filled, or
        stroked; None when unknown, TEXT when no material is a pattern. The path is done."""
        ops, ctm, line = self.path_ops, self.paint.ctm, self.paint.line
        self.path_ops, self.begun = [], False
        if not any(materials):
            return TEXT
        if ops is None or ctm is None or (stroked and line is None):
            return None
        return ("path", tuple(ops), ctm, line if stroked else None)

    @guarded
    def op_m(self, ctx, x, y) -> None:
        self._keep("m", x, y)

    @guarded
    def op_l(self, ctx, x, y) -> None:
        self._keep("l", x, y)

    @guarded
    def op_c(self, ctx, x1, y1, x2, y2, x3, y3) -> None:
        self._keep("c", x1, y1, x2, y2, x3, y3)

    @guarded
    def op_v(self, ctx, x2, y2, x3, y3) -> None:
        self._keep("v", x2, y2, x3, y3)

    @guarded
    def op_y(self, ctx, x1, y1, x3, y3) -> None:
        self._keep("y", x1, y1, x3, y3)

    @guarded
    def op_h(self, ctx) -> None:
        self._keep("h")

    @guarded
    def op_re(self, ctx, x, y, w, h) -> None:
        self._keep("re", x, y, x + w, y + h)

    @guarded
    def op_n(self, ctx) -> None:
        self._shape()

    def flush_text(self) -> None:
        """The text shown since the last flush is painted now, in the mode it was shown in,
        over its glyphs' box (`textbox`: TEXT where it is not known)."""
        mode, self.text, self.text_draws = self.text, None, []
        if mode is None:
            return
        fill, stroke = mode in _FILLS, mode in _STROKES
        box = self.text_box(stroke)
        if fill or stroke:
            patterned = fill and self.paint.fill or stroke and self.paint.stroke
            self.painted(fill, stroke, ("box", box) if box and patterned else TEXT)

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
                self.lay_out(codes)
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
    def op_cm(self, ctx, a, b, c, d, e, f) -> None:
        self.flush_text()  # MuPDF paints the text shown before
        ctm = self.paint.ctm
        self.paint = replace(self.paint, ctm=None if ctm is None else tiles.concat(
            (a, b, c, d, e, f), ctm))  # fmt: skip

    @guarded
    def op_gs_SMask(self, ctx, smask, cs, bc, luminosity, tr) -> None:
        group = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(smask)) if smask is not None else None
        self._set(softmask=self._stream(group) if group and group.m_internal else None,
                  softmask_ctm=self.paint.ctm)  # fmt: skip
        if self.paint.softmask is not None:
            self._follow()

    @guarded
    def op_gs_begin(self, ctx, name, extgstate) -> None:
        state = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(extgstate))
        if any(mupdf.pdf_dict_gets(state, key).m_internal for key in _FLUSHED_BY):
            self.flush_text()
        super().op_gs_begin(ctx, name, extgstate)

    # inside an uncoloured (`d1`) Type3 glyph MuPDF ignores every colour operator: the glyph
    # paints as a mask, and a pattern it selects never runs (`Type3Glyphs.mask_glyphs`)
    @guarded
    def op_sc_pattern(self, ctx, name, pat, n, color) -> None:
        if not self.mask_glyphs:
            self._pattern("fill", name)

    @guarded
    def op_SC_pattern(self, ctx, name, pat, n, color) -> None:
        if not self.mask_glyphs:
            self._pattern("stroke", name)

    def _pattern(self, which: str, name: str) -> None:
        pattern = self._lookup("Pattern", name)
        tiling = pattern and mupdf.pdf_dict_get_int(pattern, mupdf.PDF_ENUM_NAME_PatternType) == 1
        # its text state is that of the stream it is selected in, as it started (MuPDF's
        # "gparent"): its cell's text shows in that mode and font, not the current ones; and so
        # is its pattern space, from that stream's base transform
        self._set(**{which: (*self._stream(pattern), self.text_base) if tiling else None,
                     f"{which}_base": self.base})  # fmt: skip
        if tiling:
            self._follow()

    # -- operators followed once a pattern or soft mask is set -------------------------------
    @guarded
    def op_f(self, ctx) -> None:
        self.painted(fill=True, shape=self._shape(self.paint.fill))

    @guarded
    def op_S(self, ctx) -> None:
        self.painted(stroke=True, shape=self._shape(self.paint.stroke, stroked=True))

    @guarded
    def op_B(self, ctx) -> None:  # the fill's box is the stroke's too
        shape = self._shape(self.paint.fill, self.paint.stroke, stroked=True)
        self.painted(fill=True, stroke=True, shape=shape)

    op_F = op_fstar = op_f
    op_s = op_S
    op_Bstar = op_b = op_bstar = op_B

    @guarded
    def op_sh(self, ctx, name, shade) -> None:
        self.mask_paint()

    @guarded
    def op_cs(self, ctx, *args) -> None:  # any colour space: no pattern until `scn` names one
        if not self.mask_glyphs:
            self._set(fill=None)

    @guarded
    def op_CS(self, ctx, *args) -> None:
        if not self.mask_glyphs:
            self._set(stroke=None)

    op_g = op_rg = op_k = op_sc_shade = op_cs
    op_G = op_RG = op_K = op_SC_shade = op_CS

    @guarded
    def op_ET(self, ctx, *args) -> None:  # and every change of state that flushes text
        self.flush_text()

    @guarded
    def op_w(self, ctx, width) -> None:
        self._line(0, width)

    @guarded
    def op_j(self, ctx, join) -> None:
        self._line(1, join)

    @guarded
    def op_M(self, ctx, limit) -> None:
        self._line(2, limit)

    def _line(self, which: int, value) -> None:
        self.flush_text()
        line = self.paint.line
        if line is not None:
            line = (*line[:which], value, *line[which + 1 :])
        self.paint = replace(self.paint, line=line)

    op_J = op_d = op_ri = op_ET
    op_sc_color = op_SC_color = op_MP = op_DP = op_END = op_ET

"""The box of the text a paint fills or strokes with a tiling pattern, as MuPDF's renderer bounds
it (pdf-op-run.c, `pdf_flush_text`): the union of its glyphs' boxes since the text was last
painted, each MuPDF's box of the glyph in its font (`fz_bound_glyph`) under the glyph's text
rendering matrix (the text matrix, Tc, Tw, Tz, Ts, the size, Tm, Td, TD, T*, TL, TJ's
adjustments), grown by one unit (`pdf_tos_make_trm`: "the glyph cache's limited positioning
precision"); in device space by the transformation (`fz_transform_rect`), grown for a stroke
by the line width (`fz_adjust_rect_for_stroke`). MuPDF's own functions compute it, on a text
object state the walk keeps (`pdf_tos_*`), so the pattern's cells are counted over the box
MuPDF runs them over (`paints`, `tiles.cells`).

Following text costs a callback per text operator and a few calls into MuPDF per glyph, so the
walk follows it only on a page that can paint with a tiling pattern: one whose resources, those
of its forms, soft masks, Type3 fonts and annotation appearances, hold one (`paints_patterns`;
resources known to hold none are not read again). Where the box cannot be told the text counts
once, as it did before:
- a font whose encoding is a CMap other than MuPDF's one- or two-byte identity (every simple
  font's, Identity-H and -V): the lengths of its codes are not followed;
- a string `Tj`, `'` or `"` shows that holds a NUL byte (MuPDF's binding hands it over as a C
  string, cut there: `type3._shown`), common in two-byte fonts; TJ's strings are read whole;
- text in a pattern's cell (MuPDF shows it in the text state of the stream that selected the
  pattern) or in a Type3 glyph MuPDF renders in the page's state (its transformation is not
  followed);
- past MAX_GLYPHS glyphs laid out on a page, whose cost stays bounded so (docs/performance.md).

A mixin for `drawn.DrawFinder`, which provides `paint` (its `text_params`, `ctm`, `line`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

from pymupdf import mupdf

from report_pipeline.core.draws import tiles
from report_pipeline.core.draws.callbacks import guarded

MAX_GLYPHS = 200_000  # glyphs laid out on a page; past them, its text boxes are unknown
_MAX_RESOURCES = 10_000  # resource dictionaries looked through for a pattern, a page
_FOLLOWED = ("op_BT", "op_Tc", "op_Tw", "op_Tz", "op_TL", "op_Ts", "op_Td", "op_TD", "op_Tm",
             "op_Tstar")  # fmt: skip
Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class TextParams:
    """MuPDF's text state (`pdf_text_state`) but the rendering mode: q/Q save it."""

    char_space: float = 0.0
    word_space: float = 0.0
    scale: float = 1.0  # Tz / 100
    leading: float = 0.0
    rise: float = 0.0
    size: float = -1.0
    font: object = None  # MuPDF's pdf_font_desc, kept by the walk (`kept_fonts`)


class TextBoxes:
    boxing = False  # text is followed on this page
    string_cut = False  # the string being shown is not whole (`type3._shown`)

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.tos = mupdf.pdf_text_object_state()
        self.raw_text = mupdf.pdf_text_state()
        self.trm = mupdf.fz_matrix()
        self.advance = mupdf.ll_pdf_tos_make_trm_outparams()  # reused: the wrapper makes one
        self.kept_fonts: dict[int, tuple[object, int]] = {}  # font -> (font, bytes a code)
        self.glyphs = 0
        self.reset_text_object()

    def follow_text_boxes(self) -> None:
        """Follow the text state and lay glyphs out from here on (a page's start)."""
        self.boxing = True
        for op in _FOLLOWED:
            getattr(self, f"use_virtual_{op}")()
        self._follow_text()

    def reset_text_object(self) -> None:
        """A processor of its own starts (the page's, an annotation's, a glyph's)."""
        mupdf.ll_pdf_tos_set_matrix(self.tos, 1, 0, 0, 1, 0, 0)
        self.tos.text_bbox = mupdf.fz_empty_rect
        self.pending: list[tuple[TextParams | None, bytes | float]] = []  # (`lay_out`)
        self.line_unknown = False  # the text matrix moved by glyphs that were not laid out
        self.box_unknown = False  # the text shown since the last paint holds such glyphs

    def save_text_object(self) -> tuple:
        tos = self.tos
        return (_matrix(tos.tm), _matrix(tos.tlm), _rect(tos.text_bbox), self.line_unknown,
                self.box_unknown, list(self.pending))  # fmt: skip

    def restore_text_object(self, saved: tuple) -> None:
        tm, tlm, box, self.line_unknown, self.box_unknown, self.pending = saved
        mupdf.ll_pdf_tos_set_matrix(self.tos, *tlm)
        self.tos.tm = mupdf.ll_fz_make_matrix(*tm)
        self.tos.text_bbox = mupdf.ll_fz_make_rect(*box)

    def drop_kept_fonts(self) -> None:
        for font, _ in self.kept_fonts.values():
            mupdf.ll_pdf_drop_font(font)
        self.kept_fonts.clear()

    # -- what a paint covers -----------------------------------------------------------------
    def text_box(self, stroked: bool) -> Box | None:
        """The device-space box of the text shown since the last paint, as MuPDF bounds it for
        the pattern it paints with (None: not known); the text is painted, so the next starts
        empty."""
        if not self.boxing:
            return None
        ctm, line = self.paint.ctm, self.paint.line
        known = not self.box_unknown and ctm is not None
        box = None
        if known and not (stroked and line is None):
            matrix = mupdf.ll_fz_make_matrix(*ctm)
            rect = mupdf.ll_fz_transform_rect(self.tos.text_bbox, matrix)
            if stroked:
                stroke = mupdf.fz_new_stroke_state()
                state = stroke.m_internal
                state.linewidth, state.linejoin, state.miterlimit = line
                rect = mupdf.ll_fz_adjust_rect_for_stroke(rect, state, matrix)
            box = _rect(rect)
        self.tos.text_bbox = mupdf.fz_empty_rect
        self.box_unknown = self.line_unknown
        return box

    # -- laying glyphs out -------------------------------------------------------------------
    def lay_out(self, codes: bytes) -> None:
        """The glyphs of `codes` (a string shown, or one Type3 character of it) are added to
        the text's box, and the text matrix moves past them, as MuPDF's `show_string` does.
        Only text shown while a tiling pattern fills or strokes can be painted with one (any
        change of material paints the text before it): other text is kept aside, and laid out
        only if text painted with a pattern follows on its line (`_catch_up`)."""
        if self.boxing:
            self._later_or_now(self.paint.text_params, codes)

    def adjust(self, amount: float) -> None:
        """A number of TJ's array: the text matrix moves by it, in thousandths of the size."""
        if self.boxing:
            self._later_or_now(self.paint.text_params, amount)

    def _later_or_now(self, params: TextParams | None, item: bytes | float) -> None:
        if self.string_cut:  # its glyphs are not known: neither is the rest of its line
            self.pending, self.line_unknown, self.box_unknown = [], True, True
            return
        if not (self.paint.fill or self.paint.stroke):
            if len(self.pending) >= MAX_GLYPHS:  # a line too long to keep: not followed
                self.pending, self.line_unknown = [], True
            if not self.line_unknown:
                self.pending.append((params, item))
            return
        if self.pending:
            self._catch_up()
        if isinstance(item, bytes):
            self._lay(params, item)
        else:
            self._move(params, item)

    def _catch_up(self) -> None:
        """Lay out the text kept aside on this line: it moves the text matrix, and was painted
        before (its glyphs are no part of the box)."""
        pending, self.pending = self.pending, []
        box = _rect(self.tos.text_bbox)
        for params, item in pending:
            if isinstance(item, bytes):
                self._lay(params, item)
            else:
                self._move(params, item)
        self.tos.text_bbox = mupdf.ll_fz_make_rect(*box)

    def _new_line(self) -> None:
        """The text matrix starts from the line matrix again: what was kept aside is not needed."""
        self.pending.clear()
        self.line_unknown = False

    def _lay(self, params: TextParams | None, codes: bytes) -> None:
        font = params.font if params is not None else None
        width = self.kept_fonts[int(font.this)][1] if font is not None else 0
        if not width or self.line_unknown or self.glyphs + len(codes) // width > MAX_GLYPHS:
            self.line_unknown = self.box_unknown = True
            return
        self.glyphs += len(codes) // width
        text, tos, trm = self.raw_text, self.tos, self.trm
        text.char_space, text.word_space, text.scale = params.char_space, params.word_space, (
            params.scale)  # fmt: skip
        text.leading, text.rise, text.size = params.leading, params.rise, params.size
        # Tw, after a one-byte space: along the line, or down a vertical one
        space = (0, params.word_space) if font.wmode else (
            tiles.f32(params.word_space * params.scale), 0)  # fmt: skip
        make_trm, move = mupdf.ll_pdf_tos_make_trm_outparams_fn, mupdf.ll_pdf_tos_move_after_char
        advance = self.advance
        for at in range(0, len(codes), width):
            code = codes[at] if width == 1 else int.from_bytes(codes[at : at + 2])
            if width == 2 and at + 1 == len(codes):
                code = 0  # a lone last byte: no code of the codespace (MuPDF's cpt 0, one byte)
            make_trm(tos, text, font, code, trm, advance)  # an identity CMap: code = CID
            move(tos)
            if code == 32 and width == 1:
                tos.tm = mupdf.ll_fz_pre_translate(tos.tm, *space)

    def _move(self, params: TextParams | None, amount: float) -> None:
        if params is None or params.font is None or self.line_unknown:
            self.line_unknown = True
            return
        tadj = tiles.f32(tiles.f32(-tiles.f32(amount) * params.size) * 0.0010000000474974513)
        offset = (0, tadj) if params.font.wmode else (tiles.f32(tadj * params.scale), 0)
        self.tos.tm = mupdf.ll_fz_pre_translate(self.tos.tm, *offset)

    # -- the text state ----------------------------------------------------------------------
    def _params(self, **changes) -> None:
        """The text state changed (q/Q save it with the paint). Pages set the same font, size
        or spacing line after line: a change to what it already is costs nothing."""
        params = self.paint.text_params
        if params is None or all(getattr(params, k) == v for k, v in changes.items()):
            return
        paint = copy.copy(self.paint)  # dataclasses.replace checks every field: 10x slower
        object.__setattr__(paint, "text_params", replace(params, **changes))
        self.paint = paint

    def select_font(self, font, size: float) -> None:
        """`Tf` (or an ExtGState's /Font): MuPDF's font and the size."""
        if not self.boxing:
            return
        if font is not None:  # one object per font, kept: the same font compares equal
            key = int(font.this)
            if key not in self.kept_fonts:
                self.kept_fonts[key] = (mupdf.ll_pdf_keep_font(font), _code_bytes(font))
            font = self.kept_fonts[key][0]
        self._params(font=font, size=size)

    @guarded
    def op_BT(self, ctx) -> None:
        mupdf.ll_pdf_tos_set_matrix(self.tos, 1, 0, 0, 1, 0, 0)
        self._new_line()

    @guarded
    def op_Tc(self, ctx, charspace) -> None:
        self._params(char_space=charspace)

    @guarded
    def op_Tw(self, ctx, wordspace) -> None:
        self._params(word_space=wordspace)

    @guarded
    def op_Tz(self, ctx, scale) -> None:
        self._params(scale=tiles.f32(scale / 100))

    @guarded
    def op_TL(self, ctx, leading) -> None:
        self._params(leading=leading)

    @guarded
    def op_Ts(self, ctx, rise) -> None:
        self._params(rise=rise)

    @guarded
    def op_Td(self, ctx, tx, ty) -> None:
        mupdf.ll_pdf_tos_translate(self.tos, tx, ty)
        self._new_line()

    @guarded
    def op_TD(self, ctx, tx, ty) -> None:
        self._params(leading=-ty)
        mupdf.ll_pdf_tos_translate(self.tos, tx, ty)
        self._new_line()

    @guarded
    def op_Tm(self, ctx, a, b, c, d, e, f) -> None:
        mupdf.ll_pdf_tos_set_matrix(self.tos, a, b, c, d, e, f)
        self._new_line()

    @guarded
    def op_Tstar(self, ctx) -> None:
        self.newline()

    def newline(self, spacing: tuple[float, float] | None = None) -> None:
        """T*, and what `'` and `"` do before they show (`"` sets Tw and Tc first)."""
        if not self.boxing:
            return
        if spacing is not None:
            self._params(word_space=spacing[0], char_space=spacing[1])
        params = self.paint.text_params
        mupdf.ll_pdf_tos_newline(self.tos, params.leading if params is not None else 0)
        self._new_line()
        self.line_unknown = params is None


def _code_bytes(font) -> int:
    """How many bytes each code of MuPDF's font takes: 1 or 2 for an identity CMap (a simple
    font's, Identity-H or -V), 0 (not followed) for any other."""
    encoding = font.encoding
    if encoding is None or encoding.codespace_len != 1:
        return 0
    if encoding.cmap_name not in ("Identity-H", "Identity-V"):  # Identity-V uses Identity-H
        return 0
    lookup = mupdf.ll_pdf_lookup_cmap
    if all(lookup(encoding, code) == code for code in (0, 0x41, 0x4142, 0xFFFF)):
        return 2
    return 1 if all(lookup(encoding, code) == code for code in (0, 0x41, 0xFF)) else 0


def _matrix(m) -> tuple[float, ...]:
    return m.a, m.b, m.c, m.d, m.e, m.f


def _rect(r) -> Box:
    return r.x0, r.y0, r.x1, r.y1


def paints_patterns(pdf_page: mupdf.PdfPage, seen: dict[int, bool]) -> bool:
    """`_paints_patterns`; False where MuPDF cannot read the page's objects (its run fails too,
    and the text counts once, as before)."""
    try:
        return _paints_patterns(pdf_page, seen)
    except mupdf.FzErrorBase:
        return False


def _paints_patterns(pdf_page: mupdf.PdfPage, seen: dict[int, bool]) -> bool:
    """Whether the page can paint with a tiling pattern: its resources, or those of the forms,
    soft-mask groups, Type3 fonts and patterns they name, or of its annotations' appearances,
    hold a /Pattern dictionary with an entry (a shading pattern counts too: cheap to tell
    apart, not worth it). `seen` keeps the objects known to reach none, across pages; past
    _MAX_RESOURCES dictionaries, yes."""
    todo = [mupdf.pdf_page_resources(pdf_page)]
    annots = mupdf.pdf_dict_get(pdf_page.obj(), mupdf.PDF_ENUM_NAME_Annots)
    for i in range(mupdf.pdf_array_len(annots) if mupdf.pdf_is_array(annots) else 0):
        look = mupdf.pdf_dict_getl(mupdf.pdf_array_get(annots, i), mupdf.PDF_ENUM_NAME_AP,
                                   mupdf.PDF_ENUM_NAME_N)  # fmt: skip
        todo += [look] if mupdf.pdf_is_stream(look) else _values(look)
    visited: set[int] = set()
    count = 0
    while todo:
        obj = todo.pop()
        number = mupdf.pdf_to_num(obj)
        if not mupdf.pdf_is_dict(obj) or (number and number in visited):
            continue
        if seen.get(number) is False:
            continue
        visited.add(number)
        count += 1
        if count > _MAX_RESOURCES:
            return True
        patterns = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Pattern)
        if mupdf.pdf_is_dict(patterns) and mupdf.pdf_dict_len(patterns):
            return True
        todo.append(mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Resources))
        for kind in ("XObject", "Font", "ExtGState"):
            todo += _values(mupdf.pdf_dict_gets(obj, kind))
        smask = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_SMask)
        if mupdf.pdf_is_dict(smask):
            todo.append(mupdf.pdf_dict_get(smask, mupdf.PDF_ENUM_NAME_G))
    seen.update(dict.fromkeys(visited - {0}, False))  # none of them reaches a pattern
    return False


def _values(obj: mupdf.PdfObj) -> list[mupdf.PdfObj]:
    if not obj.m_internal or not mupdf.pdf_is_dict(obj):
        return []
    return [mupdf.pdf_dict_get_val(obj, i) for i in range(mupdf.pdf_dict_len(obj))]

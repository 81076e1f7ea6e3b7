"""Type3 glyph procedures as drawing paths: a glyph runs, once per page, when it is shown.

A mixin for `drawn.DrawFinder`, which provides `run` and `_lookup`. MuPDF hands a shown
string's bytes over as surrogate-escaped text; each character code names its glyph procedure
through the font's /Encoding /Differences.
"""

from __future__ import annotations

from pymupdf import mupdf


class Type3Glyphs:
    font: mupdf.PdfObj | None = None  # the Type3 font selected, if one is

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.saved_fonts: list[mupdf.PdfObj | None] = []  # q/Q save and restore the font
        self.glyphs_done: set[tuple[int, str]] = set()

    def op_q(self, ctx) -> None:
        self.saved_fonts.append(self.font)

    def op_Q(self, ctx) -> None:
        self.font = self.saved_fonts.pop() if self.saved_fonts else None

    def op_Tf(self, ctx, name, font, size) -> None:
        obj = self._lookup("Font", name)
        subtype = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Subtype) if obj else None
        is_type3 = subtype is not None and mupdf.pdf_to_name(subtype) == "Type3"
        self.font = obj if is_type3 else None
        if is_type3:
            self._follow_text()

    def _follow_text(self) -> None:
        """Text and q/Q operators call back into Python only once a Type3 font is selected:
        text-heavy pages pay nothing otherwise. Until then every saved state's font was not a
        Type3 font, so restoring past the (empty) stack correctly gives None."""
        for op in ("op_q", "op_Q", "op_Tj", "op_TJ", "op_squote", "op_dquote"):
            getattr(self, f"use_virtual_{op}")()

    def op_Tj(self, ctx, string, length) -> None:
        self._show(string)

    def op_squote(self, ctx, string, length) -> None:
        self._show(string)

    def op_dquote(self, ctx, aw, ac, string, length) -> None:
        self._show(string)

    def op_TJ(self, ctx, array) -> None:
        items = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(array))
        for i in range(mupdf.pdf_array_len(items)):
            item = mupdf.pdf_array_get(items, i)
            if mupdf.pdf_is_string(item):
                self._show(mupdf.pdf_to_string(item)[0])

    def _show(self, text: str) -> None:
        if self.font is None:
            return
        font, number = self.font, mupdf.pdf_to_num(self.font)
        procs = mupdf.pdf_dict_get(font, mupdf.PDF_ENUM_NAME_CharProcs)
        own = mupdf.pdf_dict_get(font, mupdf.PDF_ENUM_NAME_Resources)
        for code in set(text.encode("utf-8", "surrogateescape")):
            name = _glyph_name(font, code)
            if (number, name) in self.glyphs_done:
                continue
            self.glyphs_done.add((number, name))
            proc = mupdf.pdf_dict_gets(procs, name) if procs.m_internal else procs
            if proc.m_internal:
                self.run("type3", proc, own)


def _glyph_name(font: mupdf.PdfObj, code: int) -> str:
    """The glyph a Type3 font's /Encoding /Differences gives a character code ("" for none)."""
    encoding = mupdf.pdf_dict_get(font, mupdf.PDF_ENUM_NAME_Encoding)
    differences = mupdf.pdf_dict_get(encoding, mupdf.PDF_ENUM_NAME_Differences)
    name, at = "", -1
    for i in range(mupdf.pdf_array_len(differences) if differences.m_internal else 0):
        item = mupdf.pdf_array_get(differences, i)
        if mupdf.pdf_is_int(item):
            at = mupdf.pdf_to_int(item)
            continue
        if at == code:
            name = mupdf.pdf_to_name(item)
        at += 1
    return name

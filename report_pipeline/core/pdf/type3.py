"""Type3 glyph procedures as drawing paths: a glyph runs, once per page, when it is shown (and
once more when it is also shown inside hidden content: one record hidden, one archived).

A mixin for `drawn.DrawFinder`, which provides `run`, `_lookup` and `hidden`. MuPDF hands a
shown string's bytes over as surrogate-escaped text (`_shown`, `_string`); each character code
names its glyph
procedure through the font's /Encoding: its /Differences, else its /BaseEncoding (a standard
encoding's printable ASCII names). A font is selected by `Tf` or by an ExtGState's /Font
(`gs`), and told apart by its object, or for a direct dictionary by the dictionary itself.
"""

from __future__ import annotations

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.pdf.callbacks import entry, guarded


class Type3Glyphs:
    font: mupdf.PdfObj | None = None  # the Type3 font selected, if one is
    fonted = False  # a font is selected, of any type (without one MuPDF shows no text)
    gs_font: mupdf.PdfObj | None = None  # an ExtGState's /Font, until its Tf comes

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.saved_fonts: list[tuple[mupdf.PdfObj | None, bool]] = []  # q/Q save and restore
        self.glyphs_done: set[tuple[int, str, str]] = set()
        self.use_virtual_op_gs_begin()  # an ExtGState may set the font too

    @guarded
    def op_q(self, ctx) -> None:
        self.saved_fonts.append((self.font, self.fonted))

    @guarded
    def op_Q(self, ctx) -> None:
        if self.saved_fonts:  # at the base of a stream, MuPDF ignores an unbalanced Q
            self.font, self.fonted = self.saved_fonts.pop()

    @guarded
    def op_Tf(self, ctx, name, font, size) -> None:
        # an ExtGState's /Font comes as Tf too, named "ExtGState": op_gs_begin read the font
        gs_font, self.gs_font = self.gs_font, None
        self.fonted = True
        self._select(gs_font if name == "ExtGState" else self._lookup("Font", name))

    @guarded
    def op_gs_begin(self, ctx, name, extgstate) -> None:
        state = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(extgstate))
        font = mupdf.pdf_dict_get(state, mupdf.PDF_ENUM_NAME_Font)  # [font size]
        if font.m_internal and mupdf.pdf_is_array(font):
            self.gs_font = mupdf.pdf_resolve_indirect(mupdf.pdf_array_get(font, 0))

    def _select(self, obj: mupdf.PdfObj | None) -> None:
        ok = obj is not None and obj.m_internal and mupdf.pdf_is_dict(obj)
        subtype = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Subtype) if ok else None
        is_type3 = subtype is not None and mupdf.pdf_to_name(subtype) == "Type3"
        self.font = obj if is_type3 else None
        if is_type3:
            self._follow_text()

    def _follow_text(self) -> None:
        """Text operators call back into Python only once a Type3 font is selected (or a
        pattern or soft mask: `paints`): text-heavy pages pay nothing otherwise."""
        for op in ("op_Tj", "op_TJ", "op_squote", "op_dquote"):
            getattr(self, f"use_virtual_{op}")()

    @guarded
    def op_Tj(self, ctx, string, length) -> None:
        self._show(_shown(string, length))

    @guarded
    def op_squote(self, ctx, string, length) -> None:
        self._show(_shown(string, length))

    @guarded
    def op_dquote(self, ctx, aw, ac, string, length) -> None:
        self._show(_shown(string, length))

    @guarded
    def op_TJ(self, ctx, array) -> None:
        items = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(array))
        for i in range(mupdf.pdf_array_len(items)):
            item = mupdf.pdf_array_get(items, i)
            if mupdf.pdf_is_string(item):
                self._show(_string(item))

    def _show(self, codes: bytes) -> None:
        if self.font is None:
            return
        font = self.font
        number = mupdf.pdf_to_num(font) or -mupdf.pdf_resolve_indirect(font).m_internal_value()
        procs = mupdf.pdf_dict_get(font, mupdf.PDF_ENUM_NAME_CharProcs)
        own = mupdf.pdf_dict_get(font, mupdf.PDF_ENUM_NAME_Resources)
        for code in set(codes):
            name = _glyph_name(font, code)
            done = (number, name, self.hidden)  # shown once, and hidden once, per page
            if done in self.glyphs_done:
                continue
            self.glyphs_done.add(done)
            proc = entry(procs, name)
            if proc is not None:
                self.run("type3", proc, own)


def _shown(string: str, length: int) -> bytes:
    """A string `Tj`, `'` or `"` shows, as bytes: MuPDF hands over its lexer's buffer (`length`
    bytes of it count; what follows is left from a longer string), which the binding reads as a
    C string, surrogate-escaped. A NUL byte ends that early: the NUL is kept, what follows it is
    not known (TJ's strings are read whole: `_string`)."""
    data = string.encode("utf-8", "surrogateescape")[:length]
    return data + b"\0" if len(data) < length else data


def _string(obj: mupdf.PdfObj) -> bytes:
    """A string object's bytes, a NUL byte and what follows it too."""
    text, length = mupdf.pdf_to_string(obj)
    data = text.encode("utf-8", "surrogateescape")[:length]
    if len(data) < length:  # a NUL ended the C string: read the object as MuPDF writes it
        printed = pymupdf.JM_object_to_buffer(obj, 1, 1).fz_buffer_extract().strip()
        if printed.startswith(b"<") and printed.endswith(b">"):
            return bytes.fromhex(printed[1:-1].decode("ascii"))
    return data


def _glyph_name(font: mupdf.PdfObj, code: int) -> str:
    """The glyph a Type3 font's /Encoding gives a character code ("" for none): its
    /Differences, else its /BaseEncoding (or the encoding named instead of a dictionary)."""
    encoding = mupdf.pdf_dict_get(font, mupdf.PDF_ENUM_NAME_Encoding)
    if encoding.m_internal and mupdf.pdf_is_name(encoding):
        return _standard_name(mupdf.pdf_to_name(encoding), code)
    base = mupdf.pdf_dict_get(encoding, mupdf.PDF_ENUM_NAME_BaseEncoding)
    name = _standard_name(mupdf.pdf_to_name(base), code) if base.m_internal else ""
    differences = mupdf.pdf_dict_get(encoding, mupdf.PDF_ENUM_NAME_Differences)
    at = -1
    for i in range(mupdf.pdf_array_len(differences) if differences.m_internal else 0):
        item = mupdf.pdf_array_get(differences, i)
        if mupdf.pdf_is_int(item):
            at = mupdf.pdf_to_int(item)
            continue
        if at == code:
            name = mupdf.pdf_to_name(item)
        at += 1
    return name


_PUNCTUATION = {  # the printable ASCII codes every standard encoding names alike, but letters
    " ": "space", "!": "exclam", '"': "quotedbl", "#": "numbersign", "$": "dollar",
    "%": "percent", "&": "ampersand", "(": "parenleft", ")": "parenright", "*": "asterisk",
    "+": "plus", ",": "comma", "-": "hyphen", ".": "period", "/": "slash", ":": "colon",
    ";": "semicolon", "<": "less", "=": "equal", ">": "greater", "?": "question", "@": "at",
    "[": "bracketleft", "\\": "backslash", "]": "bracketright", "^": "asciicircum",
    "_": "underscore", "{": "braceleft", "|": "bar", "}": "braceright", "~": "asciitilde",
}  # fmt: skip
_DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_QUOTES = {  # 0x27 and 0x60 differ between the standard encodings
    "StandardEncoding": ("quoteright", "quoteleft"),
    "WinAnsiEncoding": ("quotesingle", "grave"),
    "MacRomanEncoding": ("quotesingle", "grave"),
    "MacExpertEncoding": ("", ""),
}


def _standard_name(encoding: str, code: int) -> str:
    """A standard encoding's glyph name for a printable ASCII code ("" beyond those)."""
    if encoding not in _QUOTES or not 0x20 <= code <= 0x7E:
        return ""
    if code in (0x27, 0x60):
        return _QUOTES[encoding][code == 0x60]
    char = chr(code)
    if char.isalpha():
        return char
    return _DIGITS[code - 0x30] if char.isdigit() else _PUNCTUATION[char]

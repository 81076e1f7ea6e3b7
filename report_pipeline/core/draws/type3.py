"""Type3 glyph procedures as drawing paths: a glyph's images count each time the page paints the
glyph, as MuPDF's renderer (1.28) paints it.

Each character a Type3 font shows, by `Tj`, `TJ`, `'` or `"`, at whatever size, position or
colour, is painted, and a glyph that shows glyphs of another Type3 font paints those each time
it is painted: "aa" of a glyph that draws an image is two records, and an outer glyph shown twice
whose procedure shows two inner glyphs is four. The text rendering mode decides whether it
paints: 3 (invisible) and 7 (clip only) paint no Type3 glyph (MuPDF adds none to the clip
either); every other mode fills it, once (2 and 6, fill and stroke, do not paint it twice; 1
and 5 fill rather than stroke it; 4 to 6 add nothing to the clip). MuPDF keeps a Type3 glyph as
text of mode 0, so outside mode 0 the next glyph flushes it: each glyph paints alone, and a
pattern or soft mask counts once per glyph there (`paints`).

MuPDF renders a glyph one of two ways, and the walk follows it:
- cached, as most glyphs are: the procedure runs in a graphics state of its own (no font,
  pattern or soft mask from the page), and the text it belongs to paints with the page's
  pattern and under its soft mask when it is flushed (`paints`); its images go with that text;
- directly, for a glyph MuPDF cannot cache (it paints with a colour, line width, ... it does
  not set: `fz_glyph_cacheable`) and for a coloured (`d0`) glyph filled with a pattern: the
  procedure runs in the page's graphics state (but with no font), where its own paints use the
  pattern and the soft mask, and the text paints nothing more. The first flushes the text shown
  before it; the second makes that text invisible when it is of the same mode (MuPDF then
  paints neither it nor its glyphs' images).
Whether a glyph can be cached or is coloured, MuPDF decided running it when it loaded the font:
the walk reads its flags (`_flags`). Inside one of its own glyphs a font is a substitute for
MuPDF ("recursive type3 font"): its text paints as any font's, and no glyph runs.

A glyph is a stream like a pattern's cell: the walk runs its procedure once for each state it
is shown in (the replay key of `replays`: the paint, the visibility, the forms and glyphs
around it) and replays what that run drew at its other shows. A page showing a glyph 100,000
times is one run and a record per image drawn, inside the page's cap of records; a glyph that
draws nothing costs a set lookup per character, or nothing.

A mixin for `drawn.DrawFinder`, which provides `run`, `_lookup`, `paint`, `draws`,
`marked_off`, `overflow`, `stopped`, and from `paints`, `text`, `text_draws`, `flush_text` and
`hide_text`. MuPDF hands a shown string's bytes over as surrogate-escaped text (`_shown`,
`_string`); each character code names its glyph procedure through the font's /Encoding: its
/Differences, else its /BaseEncoding (a standard encoding's printable ASCII names). A font is
selected by `Tf` or by an ExtGState's /Font (`gs`), and told apart by its object, or for a
direct dictionary by the dictionary itself.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.draws.callbacks import entry, guarded

UNPAINTED = {3, 7}  # text rendering modes in which MuPDF paints no Type3 glyph
CACHED, UNCACHEABLE, COLOURED = 0, 1, 2  # how MuPDF renders a glyph (`Type3Font.direct`)
_MASK, _COLOR, _UNCACHEABLE = 1, 2, 4  # MuPDF's flags of a Type3 glyph (FZ_DEVFLAG_…)


@dataclass
class Type3Font:
    """A Type3 font as MuPDF loaded it for `Tf`, and its glyphs met so far."""

    obj: mupdf.PdfObj  # kept: a direct dictionary is told apart by its address
    loaded: mupdf.FzFont | None = None  # MuPDF's font (kept), for each glyph's flags
    procs: dict[int, mupdf.PdfObj | None] = field(default_factory=dict)  # code -> procedure
    flags: dict[int, int] = field(default_factory=dict)  # code -> MuPDF's glyph flags

    def proc(self, code: int) -> mupdf.PdfObj | None:
        """The procedure of the glyph `code` names (None: none)."""
        if code not in self.procs:
            procs = mupdf.pdf_dict_get(self.obj, mupdf.PDF_ENUM_NAME_CharProcs)
            self.procs[code] = entry(procs, _glyph_name(self.obj, code))
        return self.procs[code]

    def direct(self, code: int, patterned: bool) -> int:
        """How MuPDF renders the glyph `code` names: CACHED, or in the page's state because it
        cannot be cached (UNCACHEABLE), or because it is coloured (`d0`) and the fill is a
        pattern (COLOURED)."""
        if code not in self.flags:
            self.flags[code] = _flags(self.loaded, code)
        flags = self.flags[code]
        if flags & _UNCACHEABLE:
            return UNCACHEABLE
        return COLOURED if patterned and flags & _COLOR and not flags & _MASK else CACHED

    def masked(self, code: int) -> bool:
        """Whether the glyph `code` names is uncoloured (`d1`): MuPDF's device then ignores its
        colour operators (FZ_DEVFLAG_MASK), so a pattern it selects never paints."""
        if code not in self.flags:
            self.flags[code] = _flags(self.loaded, code)
        return bool(self.flags[code] & _MASK)


def _flags(loaded: mupdf.FzFont | None, gid: int) -> int:
    """MuPDF's flags for the glyph `gid` of a loaded Type3 font (its `t3flags`, which it sets
    running each glyph when it loads the font: `d0` or `d1`, what it leaves undefined, whether
    it can be cached); 0 when they cannot be read (a cached glyph: the usual case). The binding
    hands the array over as a bare pointer: it is read where it lies, inside the font the walk
    keeps a reference to."""
    try:
        font = loaded.m_internal if loaded is not None else None
        if font is None or not 0 <= gid < font.glyph_count or font.t3flags is None:
            return 0
        return ctypes.c_uint16.from_address(int(font.t3flags) + 2 * gid).value
    except (AttributeError, TypeError, ValueError):
        return 0


class Type3Glyphs:
    font: mupdf.PdfObj | None = None  # the Type3 font selected, if one is
    fonted = False  # a font is selected, of any type (without one MuPDF shows no text)
    mask_glyphs = 0  # uncoloured (`d1`) glyphs being run: no colour operator counts
    gs_font: mupdf.PdfObj | None = None  # an ExtGState's /Font, until its Tf comes

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.saved_fonts: list[tuple[mupdf.PdfObj | None, bool]] = []  # q/Q save and restore
        self.type3_fonts: dict[int, Type3Font] = {}  # by the font's identity, as selected
        self.fonts_running: list[int] = []  # the fonts whose glyphs are being run, outermost first
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
        self.select_font(font, size)  # `textbox`
        loaded = getattr(font, "font", None) if font is not None else None  # pdf_font_desc
        loaded = mupdf.FzFont(mupdf.ll_fz_keep_font(loaded)) if loaded is not None else None
        self._select(gs_font if name == "ExtGState" else self._lookup("Font", name), loaded)

    @guarded
    def op_gs_begin(self, ctx, name, extgstate) -> None:
        state = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(extgstate))
        font = mupdf.pdf_dict_get(state, mupdf.PDF_ENUM_NAME_Font)  # [font size]
        if font.m_internal and mupdf.pdf_is_array(font):
            self.gs_font = mupdf.pdf_resolve_indirect(mupdf.pdf_array_get(font, 0))

    def _select(self, obj: mupdf.PdfObj | None, loaded: mupdf.FzFont | None = None) -> None:
        ok = obj is not None and obj.m_internal and mupdf.pdf_is_dict(obj)
        subtype = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Subtype) if ok else None
        is_type3 = subtype is not None and mupdf.pdf_to_name(subtype) == "Type3"
        if is_type3 and loaded is not None and not mupdf.fz_font_t3_procs(loaded):
            is_type3 = False  # MuPDF could not load it and draws with a substitute font
        if is_type3 and _identity(obj) in self.fonts_running:
            is_type3 = False  # inside its own glyphs: MuPDF's "recursive type3 font", the same
        self.font = obj if is_type3 else None
        if is_type3:
            number = _identity(obj)
            if number not in self.type3_fonts:
                self.type3_fonts[number] = Type3Font(obj)
            if loaded is not None:
                self.type3_fonts[number].loaded = loaded
            self._follow_text()

    def _follow_text(self) -> None:
        """Text operators call back into Python only once a Type3 font is selected (or a
        pattern or soft mask: `paints`): text-heavy pages pay nothing otherwise."""
        for op in ("op_Tj", "op_TJ", "op_squote", "op_dquote"):
            getattr(self, f"use_virtual_{op}")()

    @guarded
    def op_Tj(self, ctx, string, length) -> None:
        self._show_string(string, length)

    @guarded
    def op_squote(self, ctx, string, length) -> None:
        self.newline()  # `textbox`
        self._show_string(string, length)

    @guarded
    def op_dquote(self, ctx, aw, ac, string, length) -> None:
        self.newline((aw, ac))
        self._show_string(string, length)

    def _show_string(self, string: str, length: int) -> None:
        """A string `Tj`, `'` or `"` shows; one the binding cut at a NUL byte (`_shown`) cannot
        be laid out (`textbox`: its glyphs' box and advance are not known)."""
        codes = _shown(string, length)
        self.string_cut = len(codes) < length
        try:
            self._show(codes)
        finally:
            self.string_cut = False

    @guarded
    def op_TJ(self, ctx, array) -> None:
        items = mupdf.PdfObj(mupdf.ll_pdf_keep_obj(array))
        for i in range(mupdf.pdf_array_len(items)):
            item = mupdf.pdf_array_get(items, i)
            if mupdf.pdf_is_string(item):
                self._show(_string(item))
            else:
                self.adjust(mupdf.pdf_to_real(item))  # `textbox`

    def _show(self, codes: bytes) -> None:
        """Each character of `codes` (a shown string's bytes) the selected Type3 font paints,
        in order. A cached glyph is text that paints at the next flush, and its draws go with
        it (`paints`: `text_draws`); MuPDF keeps it as text of mode 0, so outside mode 0 the
        next glyph flushes it: each glyph paints alone. A glyph MuPDF renders directly is text
        of mode 3 (invisible) besides: one that cannot be cached flushes the text before it, a
        coloured one makes the text before it invisible (unless its mode differs)."""
        render = self.paint.render
        if self.font is None or not codes or render in UNPAINTED:
            return
        number = _identity(self.font)
        font = self.type3_fonts[number]
        plain = self.paint.fill is None and self.paint.softmask is None  # a paint draws nothing
        direct = {code: how for code in set(codes)
                  if (how := font.direct(code, self.paint.fill is not None))}  # fmt: skip
        # a cached glyph that draws nothing (no procedure, or a run that drew nothing in this
        # state and changed none) is only text: skipped at C speed when the paint of the text
        # glyph by glyph adds nothing either, else by a set lookup
        quiet = {code for code in set(codes) - direct.keys() if font.proc(code) is None}
        # (not when glyphs are laid out one by one for the text's box: `textbox`)
        skipped = bool(quiet) and not direct and (plain or render == 0) and not self.boxing
        if skipped:
            last, codes = codes[-1], codes.translate(None, bytes(quiet))
            self._text_glyph()
        own = mupdf.pdf_dict_get(self.font, mupdf.PDF_ENUM_NAME_Resources)
        for code in codes:
            if code in quiet:
                self._text_glyph()
                self.lay_out(bytes((code,)))
                continue
            how = direct.get(code, CACHED)
            if how == UNCACHEABLE or self.text is not None and self.text != render:
                self.flush_text()
            if how == COLOURED:
                self.hide_text()
            self.lay_out(bytes((code,)))  # in the text it belongs to (`textbox`)
            before, proc = (len(self.draws), self.marked_off), font.proc(code)
            masked = font.masked(code)
            self.fonts_running.append(number)
            self.mask_glyphs += masked
            try:
                if proc is not None:
                    # in the page's state, but where the glyph is placed is not followed:
                    # its paints' areas are unknown (`paints`)
                    paint = replace(self.paint, ctm=None, line=None) if how else None
                    self.run("type3", proc, own, paint)
            finally:
                self.fonts_running.pop()
                self.mask_glyphs -= masked
            if self.overflow or self.stopped:
                return
            self.text = 3 if how else 0
            if not how and len(self.draws) > before[0]:
                self.text_draws.append((before[0], len(self.draws)))
            elif not how and self.marked_off == before[1]:
                quiet.add(code)
        if skipped and last in quiet:
            self._text_glyph()  # the string ends with a glyph that only is text

    def _text_glyph(self) -> None:
        """A cached glyph that draws nothing shown: text of mode 0, flushing text of another
        mode before it."""
        if self.text is not None and self.text != self.paint.render:
            self.flush_text()
        self.text = 0


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


def _identity(font: mupdf.PdfObj) -> int:
    return mupdf.pdf_to_num(font) or -mupdf.pdf_resolve_indirect(font).m_internal_value()


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

"""Read a staged PDF: which images a page draws, and the facts its dictionaries declare."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.draws.drawn import Draw, TooManyDraws, page_draws
from report_pipeline.core.model.records import PageStreams

MAX_DRAWS_PER_PAGE = 10_000
MAX_DRAWS_PER_REPORT = 50_000  # one child record each: keeps the manifest well under its cap
_NAMES = re.compile(r"/([A-Za-z0-9]+)")
_COMPONENTS = {
    "DeviceGray": 1, "CalGray": 1, "Indexed": 1, "Separation": 1, "Pattern": 1,
    "DeviceRGB": 3, "CalRGB": 3, "Lab": 3, "DeviceCMYK": 4,
}  # fmt: skip


# Abbreviated filter names (an inline image may use them), as the full names
ALIASES = {
    "AHx": "ASCIIHexDecode", "A85": "ASCII85Decode", "LZW": "LZWDecode", "Fl": "FlateDecode",
    "RL": "RunLengthDecode", "CCF": "CCITTFaxDecode", "DCT": "DCTDecode",
}  # fmt: skip


# every filter MuPDF's stream builder knows (1.28, canonical names); it passes any other through
MUPDF_FILTERS = frozenset(ALIASES.values()) | {
    "ASCIIHexDecode", "ASCII85Decode", "LZWDecode", "FlateDecode", "RunLengthDecode",
    "CCITTFaxDecode", "DCTDecode", "JBIG2Decode", "JPXDecode", "BrotliDecode", "Br", "Crypt",
}  # fmt: skip


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


@dataclass(frozen=True)
class ImageRef:
    """One image a page draws: what the PDF declares, before any decoding.

    `xref` is 0 for an inline image, whose parsed object (MuPDF's, undecoded) is `inline`."""

    page: int  # 1-based
    index: int  # position among the page's image draws
    xref: int
    smask: int
    width: int
    height: int
    bpc: int
    filters: tuple[str, ...]  # canonical names, outermost first (`filter_chain`)
    origin: str = "xobject"
    inline: object = field(default=None, compare=False, repr=False)
    parms: tuple[str, ...] = ()  # each filter's /DecodeParms dictionary as text ("" for none)
    hidden: str = ""  # why a viewer does not show it (core/draws/visibility.py); "" when shown
    defaults: str = ""  # the default colour spaces it is drawn under (core/draws/defaults.py)

    @property
    def share(self) -> tuple[int, str]:
        """What makes two draws one decode: the same image under the same defaults."""
        return self.xref, self.defaults


# a page's image draws in order: (origin, xref; 0: inline, why it is hidden; "": shown,
# the default colour spaces it is drawn under; "": none named)
Draws = list[tuple[str, int, str, str]]


def compact(draws: Draws) -> dict:
    """A page's draws for the wire and the store: each distinct origin and set of default
    colour spaces written once (10,000 draws 24 forms deep stay well under a frame's 1 MiB
    header), a hidden one's reason third, the index of its defaults fourth."""
    origins: dict[str, int] = {}
    specs: dict[str, int] = {}
    entries = []
    for origin, xref, hidden, spec in draws:
        entry = [origins.setdefault(origin, len(origins)), xref]
        if spec:
            entry += [hidden, specs.setdefault(spec, len(specs))]
        elif hidden:
            entry.append(hidden)
        entries.append(entry)
    found = {"origins": list(origins), "draws": entries}
    return found | {"defaults": list(specs)} if specs else found


def expand(message: dict) -> Draws:
    """`compact`'s inverse (draws kept before hidden ones were told apart read as shown, and
    before defaults were kept as under none); a malformed entry raises (ValueError, IndexError,
    TypeError)."""
    origins = [str(o) for o in message["origins"]]
    specs = [str(d) for d in message.get("defaults", ())]
    return [(origins[k], int(xref), str(rest[0]) if rest else "",
             specs[rest[1]] if len(rest) > 1 else "")
            for k, xref, *rest in message["draws"]]  # fmt: skip


class TooManyImages(Exception):
    """The report draws more images than a manifest may list."""


def open_pdf(path: Path) -> pymupdf.Document:
    return pymupdf.open(path, filetype="pdf")


def filter_chain(doc: pymupdf.Document, xref: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The filters MuPDF decodes a stream with, and each one's /DecodeParms as text: read from
    the resolved object as MuPDF reads it (/Filter or its abbreviation /F, /DecodeParms or /DP,
    a name or an array, indirect at any level), names canonical (/DCT is DCTDecode). A /Crypt
    filter that changes nothing (Identity, or any in a document that is not encrypted) is left
    out. So every spelling of a chain meets the same caps."""
    obj = mupdf.pdf_load_object(mupdf.pdf_document_from_fz_document(doc.this), xref)
    chain = mupdf.pdf_dict_geta(obj, mupdf.PDF_ENUM_NAME_Filter, mupdf.PDF_ENUM_NAME_F)
    filters = _items(chain)
    given = mupdf.pdf_dict_geta(obj, mupdf.PDF_ENUM_NAME_DecodeParms, mupdf.PDF_ENUM_NAME_DP)
    # MuPDF takes a filter array's parameters from an array only: a lone dictionary beside
    # one applies to none of them (a lone filter takes a dictionary or an array's first)
    lone = chain.m_internal and mupdf.pdf_is_array(chain) and not mupdf.pdf_is_array(given)
    parms = [] if lone else _items(given)
    names = [canonical(mupdf.pdf_to_name(f)) if mupdf.pdf_is_name(f) else "?" for f in filters]
    texts = ([_text(p) for p in parms] + [""] * len(names))[: len(names)]
    # MuPDF passes a /Crypt filter through in a document that is not encrypted, whatever it names,
    # and an entry of the chain that is no name (null, a number: "unknown filter name ()") or a
    # name it does not know ("unknown filter name (FooDecode)")
    # A /Crypt filter first in the chain of an encrypted document's stream is its decryption,
    # which `raw_stream` applies (as MuPDF's raw read does for a stream without one)
    plain = doc.xref_get_key(-1, "Encrypt")[0] == "null"
    chain = [
        (n, t)
        for k, (n, t) in enumerate(zip(names, texts, strict=True))
        if n in MUPDF_FILTERS and not (n == "Crypt" and (plain or _identity(t) or k == 0))
    ]
    return tuple(n for n, _ in chain), tuple(t for _, t in chain)


def raw_stream(doc: pymupdf.Document, xref: int) -> bytes:
    """A stream's bytes before its filters, decrypted as MuPDF decrypts them. MuPDF's raw read
    decrypts an encrypted document's stream with the document's default crypt filter, but not
    one whose chain begins with a /Crypt filter: that filter decrypts it, with the crypt filter
    it names (/Identity: none), which is applied here (`filter_chain` leaves it out)."""
    raw = doc.xref_stream_raw(xref)
    if doc.xref_get_key(-1, "Encrypt")[0] == "null":
        return raw
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    obj = mupdf.pdf_load_object(pdf, xref)
    chain = mupdf.pdf_dict_geta(obj, mupdf.PDF_ENUM_NAME_Filter, mupdf.PDF_ENUM_NAME_F)
    first = _items(chain)[:1]
    if not first or mupdf.pdf_to_name(first[0]) != "Crypt":
        return raw
    given = mupdf.pdf_dict_geta(obj, mupdf.PDF_ENUM_NAME_DecodeParms, mupdf.PDF_ENUM_NAME_DP)
    lone = mupdf.pdf_is_array(chain) and not mupdf.pdf_is_array(given)  # as `filter_chain`
    parms = [] if lone else _items(given)[:1]
    name = mupdf.pdf_dict_get(parms[0], mupdf.PDF_ENUM_NAME_Name) if parms else None
    if name is None or mupdf.pdf_to_name(name) in ("", "Identity"):
        return raw
    stored = mupdf.fz_open_buffer(mupdf.fz_new_buffer_from_copied_data(raw))
    generation = mupdf.ll_pdf_get_xref_entry_no_null(pdf.m_internal, xref).gen
    crypt = mupdf.ll_pdf_open_crypt_with_filter(
        stored.m_internal, pdf.m_internal.crypt, name.m_internal, xref, generation
    )
    return mupdf.fz_read_all(mupdf.FzStream(crypt), 0).fz_buffer_extract()


def _items(obj: mupdf.PdfObj) -> list[mupdf.PdfObj]:
    """A name or dictionary, or the elements of an array, each resolved; [] for none."""
    if not obj.m_internal or mupdf.pdf_is_null(obj):
        return []
    if mupdf.pdf_is_array(obj):  # resolves an indirect array itself
        return [mupdf.pdf_array_get(obj, i) for i in range(mupdf.pdf_array_len(obj))]
    return [obj]


def _text(obj: mupdf.PdfObj) -> str:
    obj = mupdf.pdf_resolve_indirect(obj)
    if not mupdf.pdf_is_dict(obj):
        return ""
    return pymupdf.JM_UnicodeFromBuffer(pymupdf.JM_object_to_buffer(obj, 1, 0))


def _identity(parms: str) -> bool:
    name = re.search(r"/Name\s*/(\w+)", parms)
    return name is None or name.group(1) == "Identity"


def page_images(
    doc: pymupdf.Document, page_number: int, known: Draws | None = None
) -> list[ImageRef]:
    """Every image the page draws, by any path (see `drawn`), once per draw, in drawing order.

    `known`: the page's draws as the planning walk found them, (origin, xref, hidden,
    defaults) each (core/plan/walk.py): the page is not interpreted again unless one of them
    is an inline image (xref 0), whose parsed object only a walk hands over."""
    if known is not None and all(xref > 0 for _, xref, _, _ in known):
        draws = [Draw(origin, xref, hidden=hidden, defaults=spec)
                 for origin, xref, hidden, spec in known]  # fmt: skip
        return _refs(doc, page_number, draws)
    return walk_page(doc, page_number)[0]


def walk_page(
    doc: pymupdf.Document, page_number: int, patterned: dict | None = None
) -> tuple[list[ImageRef], PageStreams]:
    """`page_images`, and which of the page's content streams broke off or were repaired
    (see `drawn.page_draws`, and for `patterned`, what is known of the document's resources
    from page to page)."""
    try:
        draws, streams = page_draws(doc, page_number, MAX_DRAWS_PER_PAGE, patterned)
    except TooManyDraws as exc:
        raise TooManyImages(str(exc)) from None
    return _refs(doc, page_number, draws), streams


def _refs(doc: pymupdf.Document, page: int, draws: list[Draw]) -> list[ImageRef]:
    """The page's draws as ImageRefs; an object drawn again (a pattern painted thousands of
    times) has its dictionary read once."""
    read: dict[int, ImageRef] = {}
    refs = []
    for index, draw in enumerate(draws):
        first = read.get(draw.xref) if draw.inline is None else None
        if first is None:
            refs.append(_ref(doc, page, index, draw))
            if draw.inline is None:
                read[draw.xref] = refs[-1]
        else:
            refs.append(replace(first, index=index, origin=draw.origin, hidden=draw.hidden,
                                defaults=draw.defaults))  # fmt: skip
    return refs


def _ref(doc: pymupdf.Document, page: int, index: int, draw: Draw) -> ImageRef:
    if draw.inline is not None:
        image = draw.inline
        return ImageRef(page, index, 0, 0, image.w(), image.h(), image.bpc(), (), draw.origin,
                        image, hidden=draw.hidden, defaults=draw.defaults)  # fmt: skip
    xref = draw.xref
    smask = doc.xref_get_key(xref, "SMask")
    width, height = (declared_int(doc, xref, key)[0] for key in ("Width", "Height"))
    bpc = declared_int(doc, xref, "BitsPerComponent")[0]
    bpc = 1 if bpc < 0 else bpc
    filters, parms = filter_chain(doc, xref)
    return ImageRef(
        page, index, xref, int(smask[1].split()[0]) if smask[0] == "xref" else 0,
        width, height, bpc, filters, draw.origin, parms=parms, hidden=draw.hidden,
        defaults=draw.defaults,
    )  # fmt: skip


# An image dictionary's keys as an inline image abbreviates them. MuPDF's image loader reads
# either spelling on any image (pdf_dict_geta), an XObject's too, and so draws one written
# `/W 5 /H 5 /BPC 8 /CS /G`: so does the walk.
_ABBREVIATED = {"Width": "W", "Height": "H", "BitsPerComponent": "BPC", "ColorSpace": "CS",
                "ImageMask": "IM", "Decode": "D", "Interpolate": "I"}  # fmt: skip


def image_entry(doc: pymupdf.Document, xref: int, key: str) -> tuple[str, str]:
    """An image dictionary's entry `key` (`xref_get_key`), or its abbreviation's when the full
    name is absent."""
    found = doc.xref_get_key(xref, key)
    if found[0] == "null" and key in _ABBREVIATED:
        return doc.xref_get_key(xref, _ABBREVIATED[key])
    return found


def declared_int(doc: pymupdf.Document, xref: int, key: str) -> tuple[int, str]:
    """An integer entry of an object's dictionary, also given by reference or abbreviated as an
    image's may be: (its value, or -1 when it is none, and the entry as written, for a message:
    "8.7", "null"). A real number that is whole (8.0) is that integer, as MuPDF reads it."""
    kind, value = _resolve(doc, *image_entry(doc, xref, key))
    value = value.strip()
    if kind in {"int", "object"} and re.fullmatch(r"-?\d+", value):
        return int(value), value
    if kind in {"float", "object"} and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)", value):
        number = float(value)
        return (int(number), value) if number.is_integer() else (-1, repr(number))
    return -1, value


def _resolve(doc: pymupdf.Document, kind: str, value: str) -> tuple[str, str]:
    """An entry given by reference as the object it names; a reference to no object (0 0 R, a
    number past the xref, one PyMuPDF calls a bad xref) is null, as PDF and MuPDF read it."""
    if kind != "xref":
        return kind, value
    number = int(value.split()[0])
    if 0 < number < doc.xref_length():
        with contextlib.suppress(RuntimeError):
            return "object", doc.xref_object(number, compressed=True)
    return "null", "null"


def components_of(doc: pymupdf.Document, xref: int) -> int | None:
    """Colour components per sample from /ColorSpace, or None when it cannot be told cheaply."""
    if image_entry(doc, xref, "ImageMask")[1] == "true":
        return 1
    kind, value = _resolve(doc, *image_entry(doc, xref, "ColorSpace"))
    names = _NAMES.findall(value)
    if not names:
        return None
    if names[0] == "ICCBased":
        icc = re.search(r"(\d+) 0 R", value)
        n = doc.xref_get_key(int(icc.group(1)), "N")[1] if icc else ""
        return int(n) if n.isdigit() else None
    if names[0] == "DeviceN":
        inner = re.search(r"\[\s*/DeviceN\s*\[([^\]]*)\]", value)
        return len(_NAMES.findall(inner.group(1))) if inner else None
    return _COMPONENTS.get(names[0])

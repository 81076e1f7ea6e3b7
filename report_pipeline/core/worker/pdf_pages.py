"""Read a staged PDF: which images a page draws, and the facts its dictionaries declare."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from report_pipeline.core.worker.drawn import Draw, TooManyDraws, page_draws

MAX_DRAWS_PER_PAGE = 10_000
MAX_DRAWS_PER_REPORT = 50_000  # one child record each: keeps the manifest well under its cap
_NAMES = re.compile(r"/([A-Za-z0-9]+)")
_COMPONENTS = {
    "DeviceGray": 1, "CalGray": 1, "Indexed": 1, "Separation": 1, "Pattern": 1,
    "DeviceRGB": 3, "CalRGB": 3, "Lab": 3, "DeviceCMYK": 4,
}  # fmt: skip


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
    filters: tuple[str, ...]
    origin: str = "xobject"
    inline: object = field(default=None, compare=False, repr=False)


class TooManyImages(Exception):
    """The report draws more images than a manifest may list."""


def open_pdf(path: Path) -> pymupdf.Document:
    return pymupdf.open(path, filetype="pdf")


def filters_of(doc: pymupdf.Document, xref: int) -> tuple[str, ...]:
    kind, value = doc.xref_get_key(xref, "Filter")
    return tuple(_NAMES.findall(value)) if kind in {"name", "array"} else ()


def page_images(doc: pymupdf.Document, page_number: int) -> list[ImageRef]:
    """Every image the page draws, by any path (see `drawn`), once per draw, in drawing order."""
    return [_ref(doc, page_number, i, d) for i, d in enumerate(_draws(doc, page_number))]


def _draws(doc: pymupdf.Document, page_number: int) -> list[Draw]:
    try:
        return page_draws(doc, page_number, MAX_DRAWS_PER_PAGE)
    except TooManyDraws as exc:
        raise TooManyImages(str(exc)) from None


def _ref(doc: pymupdf.Document, page: int, index: int, draw: Draw) -> ImageRef:
    if draw.inline is not None:
        image = draw.inline
        return ImageRef(page, index, 0, 0, image.w(), image.h(), image.bpc(), (), draw.origin,
                        image)  # fmt: skip
    xref = draw.xref
    smask = doc.xref_get_key(xref, "SMask")
    width, height, bpc = (_int(doc, xref, key) for key in ("Width", "Height", "BitsPerComponent"))
    return ImageRef(
        page, index, xref, int(smask[1].split()[0]) if smask[0] == "xref" else 0,
        width, height, bpc, filters_of(doc, xref), draw.origin,
    )  # fmt: skip


def _int(doc: pymupdf.Document, xref: int, key: str) -> int:
    kind, value = doc.xref_get_key(xref, key)
    return int(value) if kind == "int" else (1 if key == "BitsPerComponent" else -1)


def count_images(doc: pymupdf.Document) -> list[tuple[int, int]]:
    """Per page: (image draws, declared pixels), for planning tasks and the expected counts."""
    counts, total = [], 0
    for number in range(1, doc.page_count + 1):
        refs = page_images(doc, number)
        total += len(refs)
        if total > MAX_DRAWS_PER_REPORT:
            raise TooManyImages(f"the report draws more than {MAX_DRAWS_PER_REPORT} images")
        counts.append((len(refs), sum(max(0, r.width) * max(0, r.height) for r in refs)))
    return counts


def _resolve(doc: pymupdf.Document, kind: str, value: str) -> tuple[str, str]:
    if kind == "xref":
        return "object", doc.xref_object(int(value.split()[0]), compressed=True)
    return kind, value


def components_of(doc: pymupdf.Document, xref: int) -> int | None:
    """Colour components per sample from /ColorSpace, or None when it cannot be told cheaply."""
    if doc.xref_get_key(xref, "ImageMask")[1] == "true":
        return 1
    kind, value = _resolve(doc, *doc.xref_get_key(xref, "ColorSpace"))
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


def flate_predictor(doc: pymupdf.Document, xref: int) -> int:
    match = re.search(r"/Predictor\s+(\d+)", doc.xref_get_key(xref, "DecodeParms")[1])
    return int(match.group(1)) if match else 1

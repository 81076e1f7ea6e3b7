"""Read a staged PDF: which images a page draws, and the facts its dictionaries declare."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pymupdf

_NAMES = re.compile(r"/([A-Za-z0-9]+)")
_COMPONENTS = {
    "DeviceGray": 1, "CalGray": 1, "Indexed": 1, "Separation": 1, "Pattern": 1,
    "DeviceRGB": 3, "CalRGB": 3, "Lab": 3, "DeviceCMYK": 4,
}  # fmt: skip


@dataclass(frozen=True)
class ImageRef:
    """One image XObject as a page uses it: what the PDF declares, before any decoding."""

    page: int  # 1-based
    index: int  # position among the page's images
    xref: int
    smask: int
    width: int
    height: int
    bpc: int
    filters: tuple[str, ...]


def open_pdf(path: Path) -> pymupdf.Document:
    return pymupdf.open(path, filetype="pdf")


def filters_of(doc: pymupdf.Document, xref: int) -> tuple[str, ...]:
    kind, value = doc.xref_get_key(xref, "Filter")
    return tuple(_NAMES.findall(value)) if kind in {"name", "array"} else ()


def page_images(doc: pymupdf.Document, page_number: int) -> list[ImageRef]:
    """Every image XObject the page draws (once per xref), in the order MuPDF lists them."""
    page = doc[page_number - 1]
    refs = []
    for index, item in enumerate(page.get_images(full=True)):
        xref, smask, width, height, bpc = item[:5]
        refs.append(
            ImageRef(page_number, index, xref, smask, width, height, bpc, filters_of(doc, xref))
        )
    return refs


def count_images(doc: pymupdf.Document) -> list[tuple[int, int]]:
    """Per page: (image occurrences, declared pixels), for planning tasks."""
    counts = []
    for page in doc:
        items = page.get_images(full=True)
        counts.append((len(items), sum(max(0, i[2]) * max(0, i[3]) for i in items)))
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

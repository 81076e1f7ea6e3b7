"""Undo the predictor of a FlateDecode/LZWDecode filter on a bounded prefix, in pure Python.

PNG predictors (/Predictor 10-15): every row starts with its own filter type (0 None, 1 Sub,
2 Up, 3 Average, 4 Paeth), whatever the value 10-15 says. TIFF predictor 2, for 8-bit components
only. The row geometry comes from /Colors, /BitsPerComponent and /Columns (defaults 1, 8, 1).
As in MuPDF, a short last row is undone as far as it goes and any other /Predictor value means
none. Nothing is allocated beyond the input's size, whatever /Columns says; an unknown PNG row
type or an impossible geometry raises Quarantined("undecodable").
"""

from __future__ import annotations

from report_pipeline.core.validate.quarantine import Quarantined

KEYS = (("Predictor", 1), ("Colors", 1), ("BitsPerComponent", 8), ("Columns", 1))
MAX_COLORS = 32  # MuPDF's limit
PNG = range(10, 16)
TIFF = 2


def undo(data: bytes, predictor: int, colors: int, bpc: int, columns: int) -> bytes:
    """``data`` with the predictor undone (unchanged for predictor 1 or an unknown value)."""
    if predictor != TIFF and predictor not in PNG:
        return data
    if not 1 <= colors <= MAX_COLORS or bpc not in {1, 2, 4, 8, 16} or columns < 1:
        raise Quarantined(
            "undecodable", f"predictor with /Colors {colors} /BitsPerComponent {bpc} "
            f"/Columns {columns}",
        )  # fmt: skip
    stride = (colors * bpc * columns + 7) // 8
    if predictor == TIFF:
        if bpc != 8:
            raise Quarantined("undecodable", f"TIFF predictor on {bpc}-bit components")
        return tiff(data, stride, colors)
    return png(data, stride, (colors * bpc + 7) // 8)


def tiff(data: bytes, stride: int, colors: int) -> bytes:
    """TIFF predictor 2, 8-bit: each byte adds the same component of the pixel to its left."""
    out = bytearray(data)
    for start in range(0, len(out), stride):
        for x in range(start + colors, min(start + stride, len(out))):
            out[x] = (out[x] + out[x - colors]) & 0xFF
    return bytes(out)


def png(data: bytes, stride: int, bpp: int) -> bytes:
    """PNG predictors: a filter-type byte, then up to ``stride`` bytes, per row."""
    out = bytearray()
    prior = bytes(min(stride, len(data)))  # the row above the first is zeros
    for start in range(0, len(data), stride + 1):
        kind, row = data[start], bytearray(data[start + 1 : start + 1 + stride])
        if kind > 4:
            raise Quarantined("undecodable", f"PNG predictor row {len(out) // stride} type {kind}")
        if kind:
            _ROWS[kind](row, prior, bpp)
        out += row
        prior = row
    return bytes(out)


def _sub(row: bytearray, prior: bytes, bpp: int) -> None:
    for x in range(bpp, len(row)):
        row[x] = (row[x] + row[x - bpp]) & 0xFF


def _up(row: bytearray, prior: bytes, bpp: int) -> None:
    for x in range(len(row)):
        row[x] = (row[x] + prior[x]) & 0xFF


def _average(row: bytearray, prior: bytes, bpp: int) -> None:
    for x in range(len(row)):
        left = row[x - bpp] if x >= bpp else 0
        row[x] = (row[x] + ((left + prior[x]) >> 1)) & 0xFF


def _paeth(row: bytearray, prior: bytes, bpp: int) -> None:
    for x in range(len(row)):
        a, b = (row[x - bpp], prior[x]) if x >= bpp else (0, prior[x])
        c = prior[x - bpp] if x >= bpp else 0
        pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
        row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF


_ROWS = {1: _sub, 2: _up, 3: _average, 4: _paeth}

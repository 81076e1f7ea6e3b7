"""How many times MuPDF's renderer runs a tiling pattern's cell for one paint, from the geometry.

MuPDF (pdf_show_pattern) maps the painted area's bounding box, in device space, back into
pattern space with the inverse of the pattern matrix (the pattern's /Matrix after the base
transform of the stream that selected it), and counts the cells it covers in steps of
/XStep and /YStep from the pattern's /BBox. When the area spans more than one step in either
direction the cell is run once, as a tile; otherwise once per cell it touches, with a
tolerance of 0.001 of a step: 0 for an area that is a point or a line on a cell boundary, 1, 2
or 4 for a small area across boundaries. A pattern that uses blending is never a tile: MuPDF
runs its cell once per cell the area touches, however many (`blending`: MuPDF's own
pdf_pattern_uses_blending, true when the pattern's resources hold a blend mode other than
/Normal, a transparency group or an image with an /SMask, directly or in what they use); for a
path with no segment, whose box is empty (every cell from one end of MuPDF's integer range to
the other), the count is unknown. A
pattern matrix that cannot be inverted maps every area to the pattern space's origin, so the
count then depends only on where /BBox starts.

MuPDF computes in single precision, and so does this, operation by operation (its matrix
products, point and rectangle transforms, the inverse it computes in double, the steps): so
it decides as MuPDF does at the boundaries the count turns on (an area exactly one step wide,
a point exactly on a cell's edge). A coordinate too large for MuPDF's integer cell indices
gives an unknown count (None), and the caller counts the paint once, as before.

A path's box is MuPDF's own: the path is built again with MuPDF and bounded by its
fz_bound_path, filled or stroked with the line width, join and miter limit. A text object's box
is its glyphs', as MuPDF lays them out (`textbox`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

from pymupdf import mupdf

Matrix = tuple[float, float, float, float, float, float]
Rect = tuple[float, float, float, float]
IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_ZERO: Matrix = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
_MAX_INF, _MIN_INF = 2147483520.0, -2147483648.0  # FZ_MAX_INF_RECT, FZ_MIN_INF_RECT
EMPTY: Rect = (_MAX_INF, _MAX_INF, _MIN_INF, _MIN_INF)  # fz_empty_rect: a path with no segment
UNIT: Rect = (0.0, 0.0, 1.0, 1.0)
_TOLERANCE = 0.0010000000474974513  # 0.001f
_FLT_EPSILON = 1.1920928955078125e-07
_DBL_EPSILON = 2.220446049250313e-16
_INT_RANGE = 2.0**31 - 256  # cell indices MuPDF holds in an int
MAX_PATH_OPS = 10_000  # a path's operations kept for its box; past this, its box is unknown
_SINGLE = struct.Struct("f")


def f32(x: float) -> float:
    """`x` rounded to single precision, as MuPDF's float holds it (inf past its range)."""
    try:
        return _SINGLE.unpack(_SINGLE.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _sum(*terms: float) -> float:
    """Left to right, each step rounded to single precision (C's float arithmetic)."""
    total = terms[0]
    for term in terms[1:]:
        total = f32(total + term)
    return total


def concat(one: Matrix, two: Matrix) -> Matrix:
    """`one`, then `two` (MuPDF's fz_concat(one, two))."""
    a, b, c, d, e, f = one
    A, B, C, D, E, F = two
    return (
        _sum(f32(a * A), f32(b * C)), _sum(f32(a * B), f32(b * D)),
        _sum(f32(c * A), f32(d * C)), _sum(f32(c * B), f32(d * D)),
        _sum(f32(e * A), f32(f * C), E), _sum(f32(e * B), f32(f * D), F),
    )  # fmt: skip


def point(x: float, y: float, m: Matrix) -> tuple[float, float]:
    """MuPDF's fz_transform_point_xy."""
    return _sum(f32(x * m[0]), f32(y * m[2]), m[4]), _sum(f32(x * m[1]), f32(y * m[3]), m[5])


def invert(m: Matrix) -> Matrix:
    """MuPDF's fz_invert_matrix, in double: a matrix whose determinant is within DBL_EPSILON of
    0 cannot be inverted, and becomes the zero matrix."""
    a, b, c, d, e, f = m
    det = a * d - b * c
    if -_DBL_EPSILON <= det <= _DBL_EPSILON:
        return _ZERO
    det = 1 / det
    da, db, dc, dd = d * det, -b * det, -c * det, a * det
    return tuple(map(f32, (da, db, dc, dd, -e * da - f * dc, -e * db - f * dd)))  # type: ignore[return-value]


def placed(m: Matrix) -> Matrix:
    """An image's placement: fz_pre_scale(fz_pre_translate(m, 0, 1), 1, -1)."""
    a, b, c, d, e, f = m
    return (a, b, -c, -d, f32(e + c), f32(f + d))


def transform_rect(r: Rect, m: Matrix) -> Rect:
    """MuPDF's fz_transform_rect (an invalid rectangle stays invalid)."""
    x0, y0, x1, y1 = r
    if (x0, y0, x1, y1) == (_MIN_INF, _MIN_INF, _MAX_INF, _MAX_INF):
        return r
    a, b, c, d, _, _ = m
    rectilinear = abs(b) < _FLT_EPSILON and abs(c) < _FLT_EPSILON
    if rectilinear or (abs(a) < _FLT_EPSILON and abs(d) < _FLT_EPSILON):
        first, second = (a, d) if rectilinear else (b, c)
        if first < 0:
            x0, x1 = x1, x0
        if second < 0:
            y0, y1 = y1, y0
        (sx, sy), (tx, ty) = point(x0, y0, m), point(x1, y1, m)
        return sx, sy, tx, ty
    invalid = x0 > x1 or y0 > y1
    corners = [point(x, y, m) for x, y in ((x0, y0), (x0, y1), (x1, y1), (x1, y0))]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    out = (min(xs), min(ys), max(xs), max(ys))
    return (out[2], out[3], out[0], out[1]) if invalid else out


def path_box(ops: Sequence[tuple], ctm: Matrix, line: tuple[float, int, float] | None) -> Rect:
    """The device-space box MuPDF's fz_bound_path gives the path `ops` (("m", x, y), ("re",
    x0, y0, x1, y1), …) under `ctm`: filled, or stroked with `line` (width, join, miter
    limit). MuPDF builds and bounds it, so a moveto, a degenerate segment, a stroke's joins
    count as they do when MuPDF paints it."""
    path = mupdf.fz_new_path()
    for op, *coords in ops:
        _BUILD[op](path, *coords)
    matrix = mupdf.FzMatrix(*ctm)
    stroke = None
    if line is not None:
        stroke = mupdf.fz_new_stroke_state()
        state = stroke.m_internal
        state.linewidth, state.linejoin, state.miterlimit = line
    r = mupdf.ll_fz_bound_path(path.m_internal, stroke.m_internal if stroke else None,
                               matrix.internal())  # fmt: skip
    return r.x0, r.y0, r.x1, r.y1


_BUILD = {
    "m": mupdf.fz_moveto, "l": mupdf.fz_lineto, "c": mupdf.fz_curveto, "v": mupdf.fz_curvetov,
    "y": mupdf.fz_curvetoy, "h": mupdf.fz_closepath, "re": mupdf.fz_rectto,
}  # fmt: skip


def cells(
    matrix: Matrix, bbox: Rect, xstep: float, ystep: float, base: Matrix, area: Rect | None,
    blending: bool = False,
) -> int | None:  # fmt: skip
    """How many times MuPDF runs the pattern's cell to paint `area` (a device-space box, EMPTY,
    or None when unknown but finite), for a pattern of `matrix`, `bbox` and steps selected in a
    stream whose base transform is `base` (`blending`: the pattern uses blending, so it is
    never run as a tile); None when it cannot be told."""
    values = (*matrix, *bbox, xstep, ystep, *base)
    if not all(map(math.isfinite, values)) or not xstep or not ystep:
        return None
    if blending and area == EMPTY:
        return None  # a path with no segment: MuPDF would run the cell ~10^18 times
    inverse = invert(concat(matrix, base))
    if inverse == _ZERO:
        area = (0.0, 0.0, 0.0, 0.0)  # every finite area maps to the origin
    elif area is None:
        return None
    local = transform_rect(area, inverse)
    fx0, fx1 = sorted((f32(f32(local[0] - bbox[0]) / xstep), f32(f32(local[2] - bbox[0]) / xstep)))
    fy0, fy1 = sorted((f32(f32(local[1] - bbox[1]) / ystep), f32(f32(local[3] - bbox[1]) / ystep)))
    if not all(map(math.isfinite, (fx0, fx1, fy0, fy1))):
        return None
    if not blending and (f32(fx1 - fx0) > 1 or f32(fy1 - fy0) > 1):
        return 1  # a tile: the cell runs once
    across, down = _across(fx0, fx1), _across(fy0, fy1)
    return None if across is None or down is None else across * down


def _across(f0: float, f1: float) -> int | None:
    """The cells from `f0` to `f1` (in steps) as MuPDF counts them."""
    first, last = math.floor(f32(f0 + _TOLERANCE)), math.ceil(f32(f1 - _TOLERANCE))
    if max(abs(first), abs(last)) > _INT_RANGE:
        return None  # past MuPDF's int: what it does is undefined
    if f1 > f0 and last == first:
        last = first + 1
    return max(0, last - first)

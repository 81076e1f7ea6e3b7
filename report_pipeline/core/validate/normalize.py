"""Normalize a validated image to PNG in sRGB (L, LA, RGB or RGBA) and hash the result.

PDF colour semantics (ICC profiles, CMYK, Indexed, Decode arrays, the default colour spaces a
draw is made under: core/draws/defaults.py) are MuPDF's job; the soft mask becomes the alpha
channel. A stencil mask (/ImageMask) is archived as the coverage MuPDF gives
(255 = painted, its /Decode applied): 1-bit when every pixel is 0 or 255, else L.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import pymupdf
from PIL import Image, ImageChops
from pymupdf import mupdf

PNG_COMPRESS_LEVEL = 3  # measured: level 6 costs ~2x the time for ~8% fewer bytes
# every ancillary chunk Pillow 13's PNG writer can take from `info` or the save call's options
_NOTHING_FROM_THE_SOURCE = {
    "icc_profile": None, "transparency": None, "exif": None, "pnginfo": None, "dpi": None,
}  # fmt: skip


@dataclass(frozen=True)
class Normalized:
    png: bytes
    width: int
    height: int
    mode: str
    sha256: str


def pixmap_image(doc: pymupdf.Document, xref: int, defaults=None) -> Image.Image:
    """Decode through MuPDF, converting anything that is not plain gray or RGB to sRGB."""
    return to_image(pymupdf.Pixmap(doc, xref), defaults)


def to_image(pix: pymupdf.Pixmap, defaults: mupdf.FzDefaultColorspaces | None = None,
             ) -> Image.Image:  # fmt: skip
    """A decoded MuPDF pixmap as a Pillow image in L or RGB, or LA or RGBA where MuPDF's decode
    itself makes pixels transparent (a colour-key /Mask array, a JPX image's own alpha channel):
    the page does not show them. An image with an /SMask gets its alpha from the mask
    (apply_soft_mask), times this one, as MuPDF draws it. Under `defaults` (the default colour
    spaces of the draw, core/draws/defaults.py) the samples are converted to sRGB through them, as
    MuPDF's draw device converts them (a gray image that stays neutral stays L)."""
    if pix.alpha and pix.n == 1:  # a stencil mask: alpha only, no colour space
        return stencil_image(Image.frombytes("L", (pix.width, pix.height), pix.samples))
    alpha = None
    if pix.alpha:
        samples = bytes(pix.samples)[pix.n - 1 :: pix.n]
        alpha = Image.frombytes("L", (pix.width, pix.height), samples)
        if alpha.getextrema() == (255, 255):  # keys that match no sample: opaque, as before
            alpha = None
        if alpha is None or defaults is None or pix.colorspace is None:
            pix = pymupdf.Pixmap(pix, 0)  # under defaults, a real alpha is kept: _through
    space = pix.colorspace
    if defaults is not None and space is not None:
        image = _through(pix, defaults)
    else:
        if space is None or space.n == 4 or space.name not in {"DeviceGray", "DeviceRGB"}:
            pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
        mode = "L" if pix.n == 1 else "RGB"
        image = Image.frombytes(mode, (pix.width, pix.height), pix.samples)
    mode = image.mode
    if alpha is not None:  # MuPDF's samples are premultiplied by their alpha: undone here
        bands = image.split() * 3 if mode == "L" else image.split()
        straight = Image.merge("RGBa", (*bands[:3], alpha)).convert("RGBA")
        image = Image.merge("LA", (straight.getchannel("R"), alpha)) if mode == "L" else straight
    return image


def _through(pix: pymupdf.Pixmap, defaults: mupdf.FzDefaultColorspaces) -> Image.Image:
    """`pix` in sRGB as MuPDF's draw device converts it under `defaults`; L when it had one
    component and every pixel came out neutral. An alpha that makes pixels transparent (a
    colour key's) is kept through the conversion, as the page shows it: out of the profile's
    gamut, LittleCMS clips the colour otherwise with it (measured: up to 8 levels); an alpha
    that is opaque everywhere (an inline image's) is not, as the page shows it."""
    params = mupdf.FzColorParams()  # MuPDF's defaults, as a page's graphics state starts
    out = mupdf.fz_convert_pixmap(
        pix.this, mupdf.fz_device_rgb(), mupdf.FzColorspace(), defaults, params, pix.alpha
    )
    size, stride = (out.w(), out.h()), out.stride()
    data = bytes(mupdf.fz_pixmap_samples_memoryview(out))
    raw = "RGBA" if pix.alpha else "RGB"
    image = Image.frombytes(raw, size, data, "raw", raw, stride).convert("RGB")
    if pix.colorspace.n == 1:
        red, green, blue = image.split()
        if (
            not ImageChops.difference(red, green).getbbox()
            and not ImageChops.difference(green, blue).getbbox()
        ):
            return red
    return image


def stencil_image(coverage: Image.Image) -> Image.Image:
    """Mode '1' when the mask is purely on/off (the usual 1-bit case), else L as MuPDF gave it."""
    histogram = coverage.histogram()
    if sum(histogram[1:255]) == 0:
        return coverage.convert("1", dither=Image.Dither.NONE)
    return coverage


def apply_soft_mask(image: Image.Image, mask: Image.Image, stencil: bool = False) -> Image.Image:
    """The soft mask as the image's alpha, as MuPDF draws the image through it: times the alpha
    the image has of its own (a JPX image's), and for a stencil (/ImageMask) times its coverage,
    the stencil's coverage staying the archived image."""
    alpha = mask.convert("L")
    if alpha.size != image.size:
        alpha = alpha.resize(image.size, Image.Resampling.BILINEAR)
    if stencil:
        return stencil_image(ImageChops.multiply(image.convert("L"), alpha))
    if image.mode in {"LA", "RGBA"}:
        alpha = ImageChops.multiply(image.getchannel("A"), alpha)
    image = image.convert("LA" if image.mode in {"L", "LA"} else "RGBA")
    image.putalpha(alpha)
    return image


def apply_stencil(image: Image.Image, coverage: Image.Image | None) -> Image.Image:
    """An explicit /Mask as alpha: 0 where the page does not paint the image. A mask that
    paints everywhere leaves the image as it was; a smaller one is scaled without smoothing
    (its edges stay hard, as MuPDF draws it; a larger one comes scaled by MuPDF's draw device)."""
    if coverage is None or coverage.getextrema() == (255, 255):
        return image
    if coverage.size != image.size:
        coverage = coverage.resize(image.size, Image.Resampling.NEAREST)
    return apply_soft_mask(image, coverage)


def plain_mode(image: Image.Image) -> Image.Image:
    """A Pillow-decoded JPEG in a plain colour space, in L or RGB."""
    return image if image.mode in {"L", "RGB"} else image.convert("RGB")


def encode_png(image: Image.Image) -> Normalized:
    """Pixels only: IHDR, IDAT and IEND. Pillow's PNG writer copies some of a decoded image's
    `info` on its own (an embedded ICC profile into iCCP, a transparency key into tRNS); each
    key it reads is set to nothing here, so no source bytes (profile, EXIF, text, resolution)
    reach the archive and every PNG opens with Pillow's default limits."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=PNG_COMPRESS_LEVEL, **_NOTHING_FROM_THE_SOURCE)
    data = buffer.getvalue()
    return Normalized(data, image.width, image.height, image.mode, hashlib.sha256(data).hexdigest())

"""An image's /SMask is its archived alpha as MuPDF's renderer draws the image through it
(crafted round 10), compared with the page MuPDF renders, the image placed one pixel a sample:
- MuPDF loads the mask with the image and reads one gray sample a pixel from its data, whatever
  its own /ColorSpace says: a mask declared /DeviceRGB or /Indexed was decoded as an image of
  its own and its colours made gray (round 9's open question: the alpha was another one);
- a mask of another size than its image is scaled as MuPDF's draw device scales it, not by
  Pillow (which smoothed a 3 x 5 mask that MuPDF draws in blocks);
- a JPX image's own alpha and its /SMask both apply (the mask replaced the JPX alpha);
- a stencil (/ImageMask) with an /SMask paints its coverage times the mask (it was archived as
  RGBA, the coverage as colour and the mask as alpha, painting where the page paints nothing).
"""

from __future__ import annotations

import io

import numpy as np
import pymupdf
import pytest
from PIL import Image

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.slow

SIDE = 8
RNG = np.random.default_rng(10)


def image(width: int, height: int, space: bytes, data: bytes, extra: bytes = b"") -> bytes:
    return stream(b"/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace%s"
                  b"/BitsPerComponent 8%s" % (width, height, space, extra), data)  # fmt: skip


def noise(count: int, top: int = 256) -> bytes:
    return RNG.integers(0, top, count, dtype=np.uint8).tobytes()


def drawn_pdf(path, drawn, mask: bytes) -> None:
    """A page that draws the image `drawn(mask's object number)` one pixel a sample at the
    page's bottom left."""
    objects = Objects()
    number = objects.add(drawn(objects.add(mask)))
    objects.page(b"<</XObject<</Im %d 0 R>>>>" % number, b"q 8 0 0 8 0 0 cm 0 0 1 rg /Im Do Q")
    path.write_bytes(objects.pdf())


def archived_and_rendered(tmp_path, path) -> tuple[Image.Image, np.ndarray]:
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived", child
    archived = Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24)))
    with pymupdf.open(path) as doc:  # the page as MuPDF draws it, on nothing
        pix = doc[0].get_pixmap(alpha=True, clip=pymupdf.Rect(0, 200 - SIDE, SIDE, 200))
    samples = np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE, pix.n)
    return archived, samples[..., 3].astype(int)


def alpha_of(archived: Image.Image) -> np.ndarray:
    return np.asarray(archived.convert("RGBA"))[..., 3].astype(int)


MASKS = {
    "rgb": (SIDE, SIDE, b"/DeviceRGB", noise(SIDE * SIDE * 3)),
    "cmyk": (SIDE, SIDE, b"/DeviceCMYK", noise(SIDE * SIDE * 4)),
    "indexed": (SIDE, SIDE, b"[/Indexed/DeviceRGB 3<ff000000ff000000ff808080>]", noise(64, 4)),
    "smaller, 3 x 5": (3, 5, b"/DeviceGray", noise(15)),
    "larger, 16 x 16": (16, 16, b"/DeviceGray", noise(256)),
    "gray (as before)": (SIDE, SIDE, b"/DeviceGray", noise(64)),
}


@pytest.mark.parametrize("name", MASKS)
def test_the_alpha_is_the_soft_mask_mupdf_draws_the_image_through(tmp_path, name):
    width, height, space, data = MASKS[name]
    path = tmp_path / "mask.pdf"
    colours = noise(SIDE * SIDE * 3)
    drawn_pdf(path, lambda mask: image(SIDE, SIDE, b"/DeviceRGB", colours, b"/SMask %d 0 R" % mask),
              image(width, height, space, data))  # fmt: skip
    archived, rendered = archived_and_rendered(tmp_path, path)
    assert archived.mode == "RGBA" and archived.size == (SIDE, SIDE)
    assert np.abs(alpha_of(archived) - rendered).max() <= 1  # the renderer rounds a level


def test_a_jpx_images_own_alpha_and_its_soft_mask_both_apply(tmp_path):
    pixels = np.dstack([np.asarray(Image.frombytes("RGB", (SIDE, SIDE), noise(192))),
                        np.arange(64, dtype=np.uint8).reshape(SIDE, SIDE) * 4])  # fmt: skip
    jpx = io.BytesIO()
    Image.fromarray(pixels, "RGBA").save(jpx, "JPEG2000", irreversible=False)
    path = tmp_path / "jpx.pdf"
    drawn_pdf(path, lambda mask: stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/Filter"
                                        b"/JPXDecode/SMaskInData 1/SMask %d 0 R" % mask,
                                        jpx.getvalue()),
              image(SIDE, SIDE, b"/DeviceGray", noise(64)))  # fmt: skip
    archived, rendered = archived_and_rendered(tmp_path, path)
    assert np.abs(alpha_of(archived) - rendered).max() <= 1


@pytest.mark.parametrize("decode", [b"", b"/Decode[1 0]"])
def test_a_stencil_with_a_soft_mask_is_its_coverage_times_the_mask(tmp_path, decode):
    path = tmp_path / "stencil.pdf"
    bits = bytes([0b10101010, 0b11001100] * 4)
    drawn_pdf(path, lambda mask: stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ImageMask"
                                        b" true/BitsPerComponent 1%s/SMask %d 0 R" % (decode, mask),
                                        bits),
              image(SIDE, SIDE, b"/DeviceGray", noise(64)))  # fmt: skip
    archived, rendered = archived_and_rendered(tmp_path, path)
    assert archived.mode == "L"  # a stencil's coverage, as every stencil is archived
    assert np.abs(np.asarray(archived, int) - rendered).max() <= 1
    assert (rendered == 0).sum() >= 32  # where the stencil paints nothing, nothing is archived

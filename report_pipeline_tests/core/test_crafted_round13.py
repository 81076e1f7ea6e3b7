"""Classes from the thirteenth crafted round (issue 30), each against MuPDF: a gray or 4:4:4 RGB
JPEG (the JPEGs Pillow decodes) with a colour-key /Mask or a /BitsPerComponent other than 8,
which MuPDF draws otherwise than Pillow decodes them; a colour-space name MuPDF quotes when it
cannot load it, kept out of the record."""

from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.validate import per_image

RAMP = bytes((x * 16 + y) % 256 for y in range(16) for x in range(16))  # 16x16 gray


def _jpeg(mode: str) -> bytes:
    out = io.BytesIO()
    image = Image.frombytes("L", (16, 16), RAMP)
    if mode == "RGB":
        image = Image.merge("RGB", (image, image.rotate(90), image.rotate(180)))
    image.save(out, "JPEG", quality=95, subsampling=0)  # 4:4:4: decoded by Pillow
    return out.getvalue()


def _processed(mode: str, extra: bytes):
    space = b"/DeviceGray" if mode == "L" else b"/DeviceRGB"
    o = Objects()
    head = b"/Type/XObject/Subtype/Image/Width 16/Height 16/ColorSpace%s/Filter/DCTDecode" % space
    drawn = o.add(stream(head + extra, _jpeg(mode)))
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        processed = per_image.process_image(doc, ref, Limits())
        pixmap = pymupdf.Pixmap(doc, ref.xref)
    return processed, pixmap


@pytest.mark.parametrize(("mode", "key"), [("L", b"[0 100]"), ("RGB", b"[0 100 0 255 0 255]")])
def test_a_colour_key_mask_on_a_jpeg_pillow_decodes_keys_its_pixels_out(mode, key):
    """MuPDF draws the keyed pixels transparent; they were archived opaque (no alpha at all)."""
    processed, pixmap = _processed(mode, b"/BitsPerComponent 8/Mask" + key)
    assert processed.outcome.state == "validated", processed.outcome
    archived = Image.open(io.BytesIO(processed.payload))
    assert archived.mode == mode + "A"
    drawn_alpha = bytes(pixmap.samples)[pixmap.n - 1 :: pixmap.n]
    assert pixmap.alpha and archived.getchannel("A").tobytes() == drawn_alpha
    assert 0 < drawn_alpha.count(0) < 256  # some pixels keyed out, not all


def test_an_8_bit_jpeg_declared_1_bit_is_archived_as_mupdf_reads_it():
    """MuPDF reads the JPEG's bytes as 1-bit samples (the page shows that); Pillow's decode of
    the JPEG itself was archived."""
    processed, pixmap = _processed("L", b"/BitsPerComponent 1")
    assert processed.outcome.state == "validated", processed.outcome
    archived = Image.open(io.BytesIO(processed.payload))
    assert archived.convert("L").tobytes() == pixmap.samples


def test_an_8_bit_jpeg_declared_16_bit_is_a_colorspace_mismatch_not_archived_as_jpeg():
    """MuPDF reads its samples in pairs and pads the image it runs short of: the stream is
    complete, so the reason is not `truncated`; the JPEG's own decode was archived."""
    processed, _ = _processed("L", b"/BitsPerComponent 16")
    assert processed.outcome.state == "quarantined"
    assert processed.outcome.reason == "colorspace_mismatch", processed.outcome
    assert "/BitsPerComponent 16" in processed.outcome.detail


PLANTED = [b"/PLANTED", b"[/Indexed/PLANTED 1<0000>]", b"[/Pattern/PLANTED]"]


@pytest.mark.parametrize("space", PLANTED)
def test_a_colour_space_name_mupdf_quotes_stays_out_of_the_quarantine_detail(space):
    """MuPDF raises "unknown colorspace: <the name>": the name is the file's bytes, and was
    copied into the record's detail (the manifest, `quarantine list`)."""
    o = Objects()
    head = b"/Type/XObject/Subtype/Image/Width 2/Height 2/BitsPerComponent 8/ColorSpace"
    drawn = o.add(stream(head + space, b"abcd"))
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        outcome = per_image.process_image(doc, ref, Limits()).outcome
    assert (outcome.state, outcome.reason) == ("quarantined", "undecodable")
    assert "unknown colorspace" in outcome.detail and "PLANTED" not in outcome.detail

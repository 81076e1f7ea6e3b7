"""Classes from the thirteenth crafted round (issue 30), each against MuPDF: a gray or 4:4:4 RGB
JPEG (the JPEGs Pillow decodes) with a colour-key /Mask or a /BitsPerComponent other than 8,
which MuPDF draws otherwise than Pillow decodes them; a colour-space name MuPDF quotes when it
cannot load it, kept out of the record."""

from __future__ import annotations

import io
import zlib

import pymupdf
import pytest
from PIL import Image

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.validate import per_image, validation
from report_pipeline.core.validate.quarantine import Quarantined

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


def _drawn_one_to_one(doc: pymupdf.Document, side: int) -> Image.Image:
    """MuPDF's render of page 1, where the image is drawn one device pixel a sample."""
    pix = doc[0].get_pixmap(alpha=True, clip=pymupdf.Rect(0, 200 - side, side, 200))
    return Image.frombytes("RGBa", (pix.width, pix.height), pix.samples).convert("RGBA")


@pytest.mark.parametrize(("mask_side", "binary"), [(32, False), (7, True)])
def test_an_explicit_mask_of_another_size_is_scaled_as_mupdf_draws_it(mask_side, binary):
    """A 16x16 image through a 32x32 stencil /Mask: MuPDF's draw device averages the mask over
    the image's pixels (partly covered edges); it was sampled (nearest), up to 193 levels off.
    A smaller mask (7x7) is drawn with hard edges, as before."""
    bits = bytes((x * 37 + y * 11) & 0xFF for y in range(mask_side) for x in range(4))
    o = Objects()
    head = b"/Type/XObject/Subtype/Image/Width %d/Height %d/ImageMask true/BitsPerComponent 1"
    mask = o.add(stream(head % (mask_side, mask_side), bits[: mask_side * ((mask_side + 7) // 8)]))
    rgb = bytes((k * 7) % 256 for k in range(16 * 16 * 3))
    head = b"/Type/XObject/Subtype/Image/Width 16/Height 16/ColorSpace/DeviceRGB/BitsPerComponent 8"
    drawn = o.add(stream(head + b"/Mask %d 0 R" % mask, rgb))
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 16 0 0 16 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        processed = per_image.process_image(doc, ref, Limits())
        page = _drawn_one_to_one(doc, 16)
    alpha = Image.open(io.BytesIO(processed.payload)).getchannel("A")
    gaps = [
        abs(a - b) for a, b in zip(alpha.tobytes(), page.getchannel("A").tobytes(), strict=True)
    ]
    assert max(gaps) <= 1
    assert (set(alpha.tobytes()) <= {0, 255}) == binary


ADOBE_RGB = b"\xff\xee\x00\x0eAdobe\x00\x64\x00\x00\x00\x00\x00"  # APP14, transform 0: RGB
ADOBE_YCC = ADOBE_RGB[:-1] + b"\x01"  # transform 1: YCbCr


def _signalled(jpeg: bytes, jfif: bool, adobe: bytes, rgb_ids: bool) -> bytes:
    """A 3-component JPEG from Pillow (JFIF, ids 1 2 3) with its JFIF marker kept or not, an
    APP14 marker added, and its component ids (in SOF0 and SOS) made R G B."""
    out, i = bytearray(b"\xff\xd8" + adobe), 2
    while True:
        marker, length = jpeg[i + 1], int.from_bytes(jpeg[i + 2 : i + 4], "big")
        segment = bytearray(jpeg[i : i + 2 + length] if marker != 0xDA else jpeg[i:])
        for k in range(3 * rgb_ids):
            if marker == 0xC0:
                segment[10 + 3 * k] = b"RGB"[k]
            if marker == 0xDA:
                segment[5 + 2 * k] = b"RGB"[k]
        if jfif or marker != 0xE0:
            out += segment
        if marker == 0xDA:
            return bytes(out)
        i += 2 + length


@pytest.mark.parametrize(
    ("jfif", "adobe", "rgb_ids"),
    [(True, ADOBE_RGB, False), (False, ADOBE_YCC, True), (True, b"", True)],
)
def test_a_jpeg_whose_markers_disagree_on_its_colour_transform_is_archived_as_mupdf_draws_it(
    jfif, adobe, rgb_ids
):
    """libjpeg-turbo (Pillow) decoded these YCbCr where MuPDF draws them RGB, or the other way:
    the archive was up to 222 levels off the page."""
    jpeg = _signalled(_jpeg("RGB"), jfif, adobe, rgb_ids)
    o = Objects()
    head = b"/Type/XObject/Subtype/Image/Width 16/Height 16/ColorSpace/DeviceRGB"
    drawn = o.add(stream(head + b"/BitsPerComponent 8/Filter/DCTDecode", jpeg))
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        processed = per_image.process_image(doc, ref, Limits())
        drawn_by_mupdf = pymupdf.Pixmap(doc, ref.xref).samples
    assert processed.outcome.state == "validated", processed.outcome
    archived = Image.open(io.BytesIO(processed.payload))
    assert archived.mode == "RGB" and archived.tobytes() == drawn_by_mupdf
    assert Image.open(io.BytesIO(jpeg)).tobytes() != drawn_by_mupdf  # Pillow's own decode


@pytest.mark.parametrize(
    ("before", "state"),
    [(b"\n", "validated"), (b"\r\n", "validated"), (b"\n \r\n\n", "validated"),
     (b"\t", "quarantined"), (b"\x00", "quarantined")],
)  # fmt: skip
def test_a_jpeg_after_stray_newlines_is_read_as_mupdf_reads_it(before, state):
    """MuPDF's DCT decoder skips line feeds, carriage returns and spaces before the SOI (a
    writer's extra newline after `stream`) and draws the JPEG: it was `signature_mismatch`.
    Anything else before it MuPDF cannot read either ("Not a JPEG file")."""
    o = Objects()
    head = b"/Type/XObject/Subtype/Image/Width 16/Height 16/ColorSpace/DeviceGray"
    drawn = o.add(stream(head + b"/BitsPerComponent 8/Filter/DCTDecode", before + _jpeg("L")))
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        processed = per_image.process_image(doc, ref, Limits())
        drawn_by_mupdf = pymupdf.Pixmap(doc, ref.xref).samples
    assert processed.outcome.state == state, processed.outcome
    if state == "validated":
        assert Image.open(io.BytesIO(processed.payload)).tobytes() == drawn_by_mupdf
    else:
        assert processed.outcome.reason == "signature_mismatch"


def test_flate_data_of_two_zlib_streams_is_not_truncated():
    """MuPDF inflates the first zlib stream and pads the image after its end: the data did not
    end early, more follows the end, so it is `undecodable` saying so, not `truncated`. Data
    that only stops short (cut off, or an end followed by whitespace) stays `truncated`."""
    samples = bytes(range(64))
    two = zlib.compress(samples[:32]) + zlib.compress(samples[32:])
    with pytest.raises(Quarantined) as found:
        validation.check_flate_complete(two, 64)
    assert found.value.reason == "undecodable" and "follow its end" in found.value.detail
    for short in (zlib.compress(samples[:32]) + b"\r\n", zlib.compress(samples)[:20]):
        with pytest.raises(Quarantined, match="truncated"):
            validation.check_flate_complete(short, 64)

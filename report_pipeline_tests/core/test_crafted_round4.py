"""Classes from the fourth crafted round (issue 30): what the archived PNG holds is what MuPDF
draws, for a JPEG whose /DecodeParms set /ColorTransform, a colour-key /Mask array, and a
filter array given one /DecodeParms dictionary."""

from __future__ import annotations

import io
import zlib

import pymupdf
from PIL import Image

from fixtures._trees import CATALOG, classic_pdf
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.validate import per_image

PAGE = (b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]/Contents 5 0 R"
        b"/Resources<</XObject<</Im 4 0 R>>>>>>")  # fmt: skip
DRAW = b"q 100 0 0 100 0 0 cm /Im Do Q"


def _stream(dictionary: bytes, data: bytes) -> bytes:
    return b"<<%s/Length %d>>\nstream\n%s\nendstream" % (dictionary, len(data), data)


def _archived(image: bytes) -> tuple[Image.Image, pymupdf.Document]:
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", PAGE, image,
               _stream(b"", DRAW)]  # fmt: skip
    doc = pymupdf.open(stream=classic_pdf(objects), filetype="pdf")
    (ref,) = page_images(doc, 1)
    processed = per_image.process_image(doc, ref, Limits())
    assert processed.outcome.state == "validated", processed.outcome
    png = Image.open(io.BytesIO(processed.payload))
    png.load()
    return png, doc


def _rgb_jpeg() -> bytes:
    image = Image.new("RGB", (16, 16))
    image.putdata([(x * 15, y * 15, (x + y) * 7) for y in range(16) for x in range(16)])
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90)
    return out.getvalue()


def test_a_jpeg_with_colortransform_0_is_archived_as_mupdf_draws_it_not_converted():
    image = _stream(b"/Type/XObject/Subtype/Image/Width 16/Height 16/ColorSpace/DeviceRGB"
                    b"/BitsPerComponent 8/Filter/DCTDecode/DecodeParms<</ColorTransform 0>>",
                    _rgb_jpeg())  # fmt: skip
    png, doc = _archived(image)
    drawn = pymupdf.Pixmap(doc, 4)  # YCbCr samples drawn as RGB: not what Pillow makes
    assert png.mode == "RGB" and png.tobytes() == drawn.samples


def test_a_colour_key_mask_leaves_the_keyed_samples_transparent():
    samples = bytes([0, 50, 100, 250])  # /Mask[0 100]: the first three are not drawn
    image = _stream(b"/Type/XObject/Subtype/Image/Width 2/Height 2/ColorSpace/DeviceGray"
                    b"/BitsPerComponent 8/Mask[0 100]", samples)  # fmt: skip
    png, _ = _archived(image)
    assert png.mode == "LA"
    assert png.getchannel("A").tobytes() == bytes([0, 0, 0, 255])
    assert png.getpixel((1, 1)) == (250, 255)


def test_a_colour_key_that_matches_no_sample_leaves_the_image_opaque():
    image = _stream(b"/Type/XObject/Subtype/Image/Width 2/Height 2/ColorSpace/DeviceGray"
                    b"/BitsPerComponent 8/Mask[251 255]", bytes([0, 50, 100, 250]))  # fmt: skip
    png, _ = _archived(image)
    assert png.mode == "L" and png.tobytes() == bytes([0, 50, 100, 250])


def test_one_decodeparms_dictionary_beside_a_filter_array_applies_to_none_as_in_mupdf():
    rows = b"\x02\x10\x20\x02\x01\x01"  # 2x2, PNG Up-predicted, were the predictor applied
    image = _stream(b"/Type/XObject/Subtype/Image/Width 2/Height 3/ColorSpace/DeviceGray"
                    b"/BitsPerComponent 8/Filter[/FlateDecode/FlateDecode]"
                    b"/DecodeParms<</Predictor 12/Columns 2>>",
                    zlib.compress(zlib.compress(rows)))  # fmt: skip
    png, doc = _archived(image)
    assert png.tobytes() == rows == pymupdf.Pixmap(doc, 4).samples  # no predictor undone


def test_a_jpx_images_own_alpha_is_kept_straight_not_premultiplied():
    source = Image.new("RGBA", (16, 16))
    source.putdata([(x * 15, y * 15, (x + y) * 7, x * y) for y in range(16) for x in range(16)])
    jpx = io.BytesIO()
    source.save(jpx, "JPEG2000")  # lossless
    image = _stream(b"/Type/XObject/Subtype/Image/Width 16/Height 16/Filter/JPXDecode"
                    b"/SMaskInData 1", jpx.getvalue())  # fmt: skip
    png, _ = _archived(image)
    assert png.mode == "RGBA"
    assert png.getchannel("A").tobytes() == source.getchannel("A").tobytes()
    opaque_enough = [(x, y) for y in range(16) for x in range(16) if x * y >= 64]
    assert all(
        max(abs(a - b) for a, b in zip(png.getpixel(p)[:3], source.getpixel(p)[:3], strict=True))
        <= 2 for p in opaque_enough
    )  # fmt: skip


def test_a_jpeg_whose_soft_mask_has_a_matte_is_archived_with_its_colours_divided_back():
    jpeg = io.BytesIO()
    Image.new("L", (16, 16), 64).save(jpeg, "JPEG", quality=100)
    image = _stream(b"/Type/XObject/Subtype/Image/Width 16/Height 16/ColorSpace/DeviceGray"
                    b"/BitsPerComponent 8/Filter/DCTDecode/SMask 6 0 R",
                    jpeg.getvalue())  # fmt: skip
    mask = _stream(b"/Type/XObject/Subtype/Image/Width 16/Height 16/ColorSpace/DeviceGray"
                   b"/BitsPerComponent 8/Matte[0]", bytes([128]) * 256)  # fmt: skip
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", PAGE, image,
               _stream(b"", DRAW), mask]  # fmt: skip
    doc = pymupdf.open(stream=classic_pdf(objects), filetype="pdf")
    (ref,) = page_images(doc, 1)
    png = Image.open(io.BytesIO(per_image.process_image(doc, ref, Limits()).payload))
    assert png.mode == "LA" and png.getpixel((0, 0)) == (127, 128)  # 64 premultiplied by 0.5


def _fax(compression: str) -> bytes:
    """A 40x20 checkerboard's one TIFF strip, CCITT encoded by libtiff."""
    board = Image.new("1", (40, 20), 1)
    board.putdata([0 if (x // 5 + y // 4) % 2 else 1 for y in range(20) for x in range(40)])
    out = io.BytesIO()
    board.save(out, "TIFF", compression=compression)
    tiff = Image.open(io.BytesIO(out.getvalue()))
    start, length = tiff.tag_v2[273][0], tiff.tag_v2[279][0]
    return out.getvalue()[start : start + length]


def _fax_outcome(data: bytes, parms: bytes):
    image = _stream(b"/Type/XObject/Subtype/Image/Width 40/Height 20/ColorSpace/DeviceGray"
                    b"/BitsPerComponent 1/Filter/CCITTFaxDecode/DecodeParms<<%s>>" % parms,
                    data)  # fmt: skip
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", PAGE, image,
               _stream(b"", DRAW)]  # fmt: skip
    doc = pymupdf.open(stream=classic_pdf(objects), filetype="pdf")
    (ref,) = page_images(doc, 1)
    return per_image.process_image(doc, ref, Limits()).outcome


def test_fax_data_misdeclared_is_undecodable_and_fax_data_cut_short_is_truncated():
    g3, g4 = _fax("group3"), _fax("group4")
    assert _fax_outcome(g4, b"/K -1/Columns 40/Rows 20").state == "validated"
    for data, parms in ((g3, b"/K 4/Columns 40/Rows 20"),
                        (g4, b"/K -1/Columns 40/Rows 20/EncodedByteAlign true")):  # fmt: skip
        outcome = _fax_outcome(data, parms)
        assert (outcome.reason, outcome.detail) == (
            "undecodable", "MuPDF could not decode it: format error: overflow in 2d faxd"
        )  # fmt: skip
    short = _fax_outcome(g4[: len(g4) // 2], b"/K -1/Columns 40/Rows 20")
    assert short.reason == "truncated"


def _masked(mask_dictionary: bytes, mask_data: bytes):
    image = _stream(b"/Type/XObject/Subtype/Image/Width 2/Height 2/ColorSpace/DeviceGray"
                    b"/BitsPerComponent 8/Mask 6 0 R", bytes([50, 100, 150, 200]))  # fmt: skip
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", PAGE, image,
               _stream(b"", DRAW), _stream(mask_dictionary, mask_data)]  # fmt: skip
    doc = pymupdf.open(stream=classic_pdf(objects), filetype="pdf")
    (ref,) = page_images(doc, 1)
    processed = per_image.process_image(doc, ref, Limits())
    if processed.outcome.state != "validated":
        return processed.outcome
    return Image.open(io.BytesIO(processed.payload))


MASK = b"/Type/XObject/Subtype/Image/Width 2/Height 2"


def test_an_explicit_mask_leaves_the_pixels_it_masks_transparent_as_mupdf_paints_them():
    rows = bytes([0x40, 0x80])  # samples 0 1 / 1 0: 1 masks out (/Decode [0 1])
    png = _masked(MASK + b"/ImageMask true", rows)
    assert png.mode == "LA"
    assert png.getchannel("A").tobytes() == bytes([255, 0, 0, 255])
    assert png.getchannel("L").tobytes() == bytes([50, 100, 150, 200])
    inverted = _masked(MASK + b"/ImageMask true/Decode[1 0]", rows)
    assert inverted.getchannel("A").tobytes() == bytes([0, 255, 255, 0])
    # a /Mask stream without /ImageMask: MuPDF reads its samples as a mask all the same
    gray = _masked(MASK + b"/ColorSpace/DeviceGray/BitsPerComponent 1", rows)
    assert gray.getchannel("A").tobytes() == bytes([0, 255, 255, 0])


def test_an_explicit_mask_that_paints_everywhere_leaves_the_image_opaque():
    png = _masked(b"/Type/XObject/Subtype/Image/Width 1/Height 1/ImageMask true", b"\x00")
    assert png.mode == "L" and png.tobytes() == bytes([50, 100, 150, 200])


def test_an_explicit_mask_meets_the_caps_before_it_is_decoded():
    outcome = _masked(b"/Type/XObject/Subtype/Image/Width 30000/Height 30000/ImageMask true",
                      b"\x00" * 16)  # fmt: skip
    assert outcome.state == "quarantined" and outcome.reason == "pixel_cap_exceeded"


def test_an_xobject_with_an_inline_images_abbreviated_keys_is_archived_as_mupdf_draws_it():
    # `/W /H /BPC /CS /G`: an inline image's spelling, which MuPDF's loader also reads on an
    # XObject; it draws the image, so the archive has it (before: `bad_dimensions`, "/Width null")
    samples = bytes(range(0, 250, 10))  # 5 x 5, gray
    image = _stream(b"/Type/XObject/Subtype/Image/W 5/H 5/CS/G/BPC 8/F/AHx",
                    samples.hex().encode() + b">")  # fmt: skip
    png, doc = _archived(image)
    assert (png.mode, png.size) == ("L", (5, 5))
    assert png.tobytes() == pymupdf.Pixmap(doc, 4).samples == samples

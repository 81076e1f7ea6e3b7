import io
import zlib

import pymupdf
import pytest
from PIL import Image

from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import ImageRef
from report_pipeline.core.validate import per_image, validation
from report_pipeline.core.validate.validation import Quarantined


def ref(filters=("DCTDecode",), width=40, height=30, bpc=8) -> ImageRef:
    return ImageRef(1, 0, 5, 0, width, height, bpc, filters)


def jpeg(width=40, height=30) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, "JPEG")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("width", "height", "reason"),
    [(0, 10, "bad_dimensions"), (30_000, 10, "dimensions_exceed_cap"),
     (50_000, 50_000, "pixel_cap_exceeded"), (9_000, 9_000, "pixel_cap_exceeded")],
)  # fmt: skip
def test_dimension_checks_refuse_before_decode(width, height, reason):
    with pytest.raises(Quarantined) as caught:
        validation.check_dimensions(width, height, Limits())
    assert caught.value.reason == reason


def test_a_png_declared_as_jpeg_is_a_signature_mismatch():
    png = io.BytesIO()
    Image.new("RGB", (4, 4)).save(png, "PNG")
    with pytest.raises(Quarantined) as caught:
        validation.check_codec("DCTDecode", png.getvalue())
    assert caught.value.reason == "signature_mismatch"
    assert "image/png" in caught.value.detail


def test_matching_signatures_pass_and_unknown_codecs_are_not_guessed():
    assert validation.check_codec("DCTDecode", jpeg()) == "image/jpeg"
    assert validation.check_codec("FlateDecode", zlib.compress(b"x" * 99)) == "application/zlib"
    assert validation.check_codec("CCITTFaxDecode", b"\x00" * 50) is None


def test_stream_size_cap():
    with pytest.raises(Quarantined, match="stream_too_large"):
        validation.check_size(11, Limits(max_image_stream_bytes=10))


def test_truncated_jpeg_is_quarantined_not_padded():
    data = jpeg(64, 64)
    with pytest.raises(Quarantined) as caught:
        validation.decode_file_image(data[: len(data) // 2], ref(width=64, height=64), Limits())
    assert caught.value.reason == "truncated"


def test_jpeg_header_must_match_the_declared_size():
    with pytest.raises(Quarantined, match="dimension_mismatch"):
        validation.decode_file_image(jpeg(40, 30), ref(width=41, height=30), Limits())


def test_full_jpeg_decodes():
    assert validation.decode_file_image(jpeg(), ref(), Limits()).size == (40, 30)


def test_flate_completeness_is_checked_with_bounded_pieces():
    rows = bytes(range(256)) * 4096  # 1 MiB, more than one inflate piece
    validation.check_flate_complete(zlib.compress(rows), len(rows))
    with pytest.raises(Quarantined, match="truncated"):
        validation.check_flate_complete(zlib.compress(rows[:1000]), len(rows))
    with pytest.raises(Quarantined, match="undecodable"):
        validation.check_flate_complete(b"\x78\x9c garbage", 100)


def test_expected_flate_bytes_counts_png_predictor_tag_bytes():
    assert validation.expected_flate_bytes(ref(width=10, height=2), 3, 1) == 60
    assert validation.expected_flate_bytes(ref(width=10, height=2), 3, 15) == 62
    assert validation.expected_flate_bytes(ref(width=9, height=1, bpc=1), 1, 1) == 2


def test_an_image_mupdf_cannot_decode_is_undecodable_saying_what_mupdf_said():
    """The quarantine's detail is MuPDF's own message, not the kind of exception it raised
    ('FzErrorSyntax'), so a reviewer reads why: a JPX stream whose signature box is followed
    by zeros (PyMuPDF's test_2904.pdf holds one MuPDF, poppler and OpenJPEG all fail on)."""
    doc = pymupdf.open()
    doc.new_page()
    xref = doc.get_new_xref()
    doc.update_object(xref, "<</Type/XObject/Subtype/Image/Width 4/Height 4"
                            "/ColorSpace/DeviceGray/BitsPerComponent 8>>")  # fmt: skip
    doc.update_stream(xref, b"\x00\x00\x00\x0cjP  \r\n\x87\n" + bytes(40), compress=False)
    doc.xref_set_key(xref, "Filter", "/JPXDecode")  # after the data: update_stream drops it
    with pytest.raises(Quarantined) as failed:
        per_image._mupdf_decode(doc, xref)
    assert (failed.value.reason, failed.value.detail) == (
        "undecodable", "MuPDF could not decode it: Failed to read JPX header",
    )  # fmt: skip
    assert per_image.said(RuntimeError()) == "RuntimeError"  # it said nothing: its kind


def flate_image(rows: bytes, width: int, height: int, parms: str) -> tuple[pymupdf.Document, int]:
    """A gray 8-bit image XObject of `rows` (PNG-predicted, Flate-compressed) with `parms`."""
    doc = pymupdf.open()
    doc.new_page()
    xref = doc.get_new_xref()
    doc.update_object(xref, f"<</Type/XObject/Subtype/Image/Width {width}/Height {height}"
                            "/ColorSpace/DeviceGray/BitsPerComponent 8>>")  # fmt: skip
    doc.update_stream(xref, zlib.compress(rows), compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode")  # after the data: update_stream drops it
    doc.xref_set_key(xref, "DecodeParms", parms)
    return doc, xref


@pytest.mark.parametrize(
    ("height", "parms", "reason", "detail"),
    [  # rows written for 8 columns; /Columns 4 makes MuPDF's rows half as long
        (4, "<</Predictor 12/Columns 4>>", "undecodable",
         "its predictor's rows (/Colors 1 /BitsPerComponent 8 /Columns 4) hold 4 bytes, the "
         "image's 8: its parameters disagree"),
        (6, "<</Predictor 12/Columns 8>>", "truncated",  # 4 of 6 rows: it really ends early
         "MuPDF had to pad a short image stream"),
    ],
)  # fmt: skip
def test_a_predictor_whose_rows_are_shorter_than_the_images_is_no_truncation(
    height, parms, reason, detail
):
    """A complete stream whose /DecodeParms describe shorter rows than the image's leaves
    MuPDF short of samples (it pads): that is a disagreement of parameters, not a stream that
    ended early, and says so; a stream that does end early stays `truncated`."""
    rows = b"".join(b"\x00" + bytes(range(y * 8, y * 8 + 8)) for y in range(4))
    doc, xref = flate_image(rows, 8, height, parms)
    with pytest.raises(Quarantined) as failed:
        per_image._mupdf_decode(doc, xref)
    assert (failed.value.reason, failed.value.detail) == (reason, detail)

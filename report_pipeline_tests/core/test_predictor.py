"""Undoing PNG and TIFF predictors on a bounded prefix: every row type, short rows, garbage."""

import io
import struct
import zlib

import pytest
from PIL import Image

from fixtures import _encoders as enc
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.validate import predictor, prefix, validation
from report_pipeline.core.validate.validation import Quarantined


def reason(call, *args) -> str:
    with pytest.raises(Quarantined) as caught:
        call(*args)
    return caught.value.reason


def png_rows(*rows: list[int]) -> bytes:
    return b"".join(bytes(row) for row in rows)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [([[0, 1, 2, 3]], [1, 2, 3]),  # None
     ([[1, 1, 1, 1]], [1, 2, 3]), ([[1, 200, 100, 0]], [200, 44, 44]),  # Sub, wrapping
     ([[0, 1, 2, 3], [2, 1, 1, 255]], [1, 2, 3, 2, 3, 2]),  # Up
     ([[0, 10, 20, 30], [3, 5, 5, 5]], [10, 20, 30, 10, 20, 30]),  # Average
     ([[0, 10, 20, 30], [4, 1, 1, 1]], [10, 20, 30, 11, 21, 31]),  # Paeth
     ([[4, 7, 0, 0]], [7, 7, 7])],  # Paeth on the first row is Sub
)  # fmt: skip
def test_each_png_row_type_is_undone(rows, expected):
    assert predictor.undo(png_rows(*rows), 12, 1, 8, 3) == bytes(expected)


def test_png_rows_refer_to_the_pixel_to_the_left_by_its_bytes_per_pixel():
    # 2 colours x 8 bits: Sub adds the byte two to the left
    assert predictor.undo(bytes([1, 10, 20, 1, 2]), 10, 2, 8, 2) == bytes([10, 20, 11, 22])
    # 16-bit gray: also two bytes per pixel
    assert predictor.undo(bytes([1, 1, 0, 0, 5]), 11, 1, 16, 2) == bytes([1, 0, 1, 5])


def pillow_png(image: Image.Image) -> bytes:
    """The inflated IDAT of Pillow's PNG: predicted rows from an independent encoder."""
    png, i, idat = io.BytesIO(), 8, b""
    image.save(png, "PNG")
    data = png.getvalue()
    while i < len(data):
        length, kind = struct.unpack(">I4s", data[i : i + 8])
        idat += data[i + 8 : i + 8 + length] if kind == b"IDAT" else b""
        i += 12 + length
    return zlib.decompress(idat)


def test_png_predictors_from_pillow_and_the_fixture_encoder_round_trip():
    image = Image.radial_gradient("L").resize((50, 40)).convert("RGB")
    image.putpixel((7, 7), (255, 0, 9))
    parms = "<</Predictor 15/Colors 3/Columns 50>>"
    stream = zlib.compress(pillow_png(image))
    assert prefix.decode_prefix(stream, ["FlateDecode"], [parms]) == (image.tobytes(), True)
    data = bytes(range(256)) * 3 + b"odd tail"
    assert predictor.undo(enc.png_predict(data, 21, 3), 14, 3, 8, 7) == data


def test_tiff_predictor_adds_the_same_component_of_the_pixel_to_the_left():
    assert predictor.undo(bytes([10, 20, 1, 1, 1, 1] * 2), 2, 2, 8, 3) == bytes(
        [10, 20, 11, 21, 12, 22] * 2
    )
    data = bytes(range(250)) * 4
    assert predictor.undo(enc.tiff_predict(data, 120, 3), 2, 3, 8, 40) == data


def test_a_short_last_row_is_undone_as_far_as_it_goes_as_mupdf_does():
    assert predictor.undo(bytes([0, 1, 2, 3, 2, 1]), 12, 1, 8, 3) == bytes([1, 2, 3, 2])
    assert predictor.undo(bytes([0]), 12, 1, 8, 3) == b""
    assert predictor.undo(bytes([5, 1, 1, 1, 1]), 2, 1, 8, 3) == bytes([5, 6, 7, 1, 2])


def test_no_predictor_or_an_unknown_one_leaves_the_bytes_as_mupdf_does():
    assert predictor.undo(b"\x07abc", 1, 1, 8, 1) == b"\x07abc"
    assert predictor.undo(b"\x07abc", 5, 1, 8, 1) == b"\x07abc"


@pytest.mark.parametrize(
    ("data", "geometry"),
    [(bytes([5, 1, 2]), (12, 1, 8, 2)), (bytes([0, 1, 255, 1]), (10, 1, 8, 1)),
     (b"ab", (12, 0, 8, 1)), (b"ab", (12, 33, 8, 1)), (b"ab", (12, 1, 3, 1)),
     (b"ab", (12, 1, 8, 0)), (b"ab", (2, 1, 4, 8)), (b"ab", (2, -1, 8, 1))],
)  # fmt: skip
def test_garbage_rows_or_geometry_are_undecodable_not_a_crash(data, geometry):
    assert reason(predictor.undo, data, *geometry) == "undecodable"


def test_a_huge_columns_value_allocates_nothing_beyond_the_input():
    assert predictor.undo(bytes([2, 1, 2]), 12, 32, 16, 2**31 - 1) == bytes([1, 2])


def test_a_predictor_only_applies_to_flate_and_lzw():
    parms = "<</Predictor 12/Columns 1>>"
    assert prefix.decode_prefix(b"0102>", ["ASCIIHexDecode"], [parms])[0] == b"\x01\x02"
    assert prefix.decode_prefix(enc.lzw(b"\x01\x02\x01\x03"), ["LZWDecode"], [parms]) == (
        b"\x02\x03",
        True,
    )


def jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (10, 200, 30)).save(buffer, "JPEG")
    return buffer.getvalue()


def test_a_jpeg_behind_a_png_predictor_is_checked_through_it():
    parms = ["<</Predictor 12/Columns 16>>", ""]
    raw = zlib.compress(enc.png_predict(jpeg(), 16))
    filters = ("FlateDecode", "DCTDecode")
    validation.check_codestream(raw, filters, parms, (40, 30), Limits())
    assert reason(validation.check_codestream, raw, filters, parms, (40, 31), Limits()) == (
        "dimension_mismatch"
    )


def test_predicted_rows_too_short_for_the_header_are_quarantined():
    parms = ["<</Predictor 12/Columns 16>>", ""]
    short = zlib.compress(enc.png_predict(jpeg()[:40], 16))
    check = validation.check_codestream
    filters = ("FlateDecode", "DCTDecode")
    assert reason(check, short, filters, parms, (40, 30), Limits()) == "truncated"
    garbage = zlib.compress(bytes([9]) * 64)
    assert reason(check, garbage, filters, parms, (40, 30), Limits()) == "undecodable"

"""Header parsers, structural signatures and bounded prefix decoders on hand-made bytes."""

import io
import struct
import zlib

import pytest
from PIL import Image

from fixtures import _colour
from fixtures import _encoders as enc
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.validate import codestream, prefix, validation
from report_pipeline.core.validate.validation import Quarantined


def jpeg(width=40, height=30, **options) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 200, 30)).save(buffer, "JPEG", **options)
    return buffer.getvalue()


def reason(call, *args) -> str:
    with pytest.raises(Quarantined) as caught:
        call(*args)
    return caught.value.reason


@pytest.mark.parametrize("options", [{}, {"progressive": True}, {"quality": 20}])
def test_jpeg_size_comes_from_the_frame_header(options):
    assert codestream.jpeg_size(jpeg(123, 45, **options)) == (123, 45)


@pytest.mark.parametrize("sof", [0xC1, 0xC3, 0xC5, 0xC9, 0xCF])
def test_every_sof_marker_declares_the_size(sof):
    frame = b"\xff" + bytes([sof]) + struct.pack(">HBHHB", 8, 8, 77, 99, 1)
    assert codestream.jpeg_size(b"\xff\xd8\xff\xe0\x00\x04ab\xff\xff" + frame) == (99, 77)


def test_a_forged_sof_is_read_as_it_stands():
    assert codestream.jpeg_size(enc.jpeg_with_sof(jpeg(), 20000, 20000)) == (20000, 20000)


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"\xff\xd8", "truncated"), (jpeg()[:20], "truncated"),
     (b"\xff\xd8\xff\xda\x00\x02", "undecodable"), (b"\xff\xd8\xff\xe0\x00\x01", "undecodable")],
)  # fmt: skip
def test_a_short_or_frameless_jpeg_is_quarantined_not_crashed(data, expected):
    assert reason(codestream.jpeg_size, data) == expected


def test_jpx_size_is_read_from_siz_in_a_raw_codestream_and_in_a_jp2_box():
    assert codestream.jpx_size(enc.j2k_header(16000, 900)) == (16000, 900)
    image = Image.new("RGB", (37, 21))
    for options in ({"no_jp2": True}, {}):
        buffer = io.BytesIO()
        image.save(buffer, "JPEG2000", **options)
        assert codestream.jpx_size(buffer.getvalue()) == (37, 21)


def test_jpx_siz_subtracts_the_image_offset():
    siz = bytearray(enc.j2k_header(500, 400))
    siz[16:24] = struct.pack(">II", 100, 50)
    assert codestream.jpx_size(bytes(siz)) == (400, 350)


def test_a_jp2_without_its_codestream_box_is_truncated_and_garbage_undecodable():
    assert reason(codestream.jpx_size, codestream.JP2_SIGNATURE + b"\x00\x00\x00\x08ftyp") == (
        "truncated"
    )
    assert reason(codestream.jpx_size, b"\xff\x4f\xff\x51\x00") == "truncated"
    assert reason(codestream.jpx_size, b"garbage!" * 4) == "undecodable"


def test_jbig2_size_comes_from_the_page_information_segment():
    assert codestream.jbig2_size(enc.jbig2_embedded(64, 48, b"\x00")) == (64, 48)
    striped = enc.jbig2_segment(0, 48, struct.pack(">IIIIBH", 64, 0xFFFFFFFF, 0, 0, 0, 0))
    assert codestream.jbig2_size(striped) == (64, None)


def test_a_jbig2_region_larger_than_its_page_is_a_dimension_mismatch():
    page = enc.jbig2_segment(0, 48, struct.pack(">IIIIBH", 64, 48, 0, 0, 0, 0))
    region = enc.jbig2_segment(1, 39, struct.pack(">IIIIB", 60000, 48, 0, 0, 0) + b"\x01")
    assert reason(codestream.jbig2_size, page + region) == "dimension_mismatch"


def _referring(number: int, kind: int, count: int, data: bytes) -> bytes:
    """A segment header with a short-form referred-to count of `count` (each a 1-byte number)."""
    return (
        struct.pack(">IBB", number, kind, count << 5)
        + bytes(count)
        + struct.pack(">BI", 0, len(data))
        + data
    )


BIG_PAGE = struct.pack(">IIIIBH", 30000, 30000, 0, 0, 0, 0)


@pytest.mark.parametrize(
    ("globals_", "sizes"),
    [(b"\xde\xad\xbe\xef" * 8, []),  # no header jbig2dec can complete: ignored
     (b"hello world, this is not JBIG2 at all", []),  # an unknown type whose data never comes
     (enc.jbig2_globals(), []),  # a Huffman table: no size
     (enc.jbig2_segment(0, 48, BIG_PAGE, page=0), [(30000, 30000)]),
     # jbig2dec reads a count of 5 as any other, and reads on past a type it does not know
     (_referring(0, 62, 5, b"") + enc.jbig2_segment(1, 48, BIG_PAGE, page=0), [(30000, 30000)]),
     (enc.jbig2_segment(0, 30, b"xx", page=0) + enc.jbig2_segment(1, 48, BIG_PAGE, page=0),
      [(30000, 30000)])],
    ids=["deadbeef", "text", "huffman_table", "page", "count_5", "unknown_type"],
)  # fmt: skip
def test_jbig2_globals_are_read_as_jbig2dec_reads_them_never_refused_for_their_structure(
    globals_, sizes
):
    """MuPDF (jbig2dec) decodes an image whose globals hold no readable segment without a word:
    nothing in them is refused, and every size jbig2dec would allocate is found for the caps."""
    assert codestream.jbig2_global_sizes(globals_) == sizes


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"", "undecodable"), (b"\x00\x00\x00\x00\x30", "truncated"),
     (enc.jbig2_segment(0, 63, b""), "undecodable"),
     (enc.jbig2_segment(0, 48, b"\x00\x00"), "truncated"), (enc.jbig2_globals(), "undecodable")],
)  # fmt: skip
def test_a_broken_jbig2_stream_is_quarantined_not_crashed(data, expected):
    assert reason(codestream.jbig2_size, data) == expected


@pytest.mark.parametrize(
    ("codec", "data", "name"),
    [("DCTDecode", jpeg(), "image/jpeg"), ("DCT", jpeg(), "image/jpeg"),
     ("JPXDecode", enc.j2k_header(4, 4), "image/x-jp2-codestream"),
     ("JPXDecode", codestream.JP2_SIGNATURE, "image/jp2"),
     ("FlateDecode", enc.tfm_lookalike_zlib(bytes(range(256)) * 9), "application/zlib"),
     ("JBIG2Decode", enc.jbig2_embedded(8, 8, b""), "image/x-jbig2"),
     ("ASCIIHexDecode", b"0a 1B\n ff>", "text/x-asciihex"),
     ("ASCII85Decode", b"<~87cURD]i,\"Ebo80~>", "text/x-ascii85")],
)  # fmt: skip
def test_signatures_are_recognised_by_structure(codec, data, name):
    assert validation.check_codec(codec, data) == name


def test_a_zlib_stream_libmagic_calls_a_tex_font_metric_is_still_flate():
    data = bytes(range(256)) * 9
    stream = enc.tfm_lookalike_zlib(data)
    assert zlib.decompress(stream) == data
    assert validation.check_codec("FlateDecode", stream) == "application/zlib"


@pytest.mark.parametrize(
    ("codec", "data"),
    [("FlateDecode", jpeg()), ("DCTDecode", zlib.compress(b"x" * 50)),
     ("JPXDecode", jpeg()),
     ("JBIG2Decode", b"\x00\x00\x00\x00\x3f\x00\x01\x00\x00\x00\x00")],
)  # fmt: skip
def test_bytes_of_another_format_are_a_signature_mismatch(codec, data):
    assert reason(validation.check_codec, codec, data) == "signature_mismatch"


@pytest.mark.parametrize(
    ("codec", "data", "detail"),
    [("ASCIIHexDecode", b"0a1g>", codestream.NOT_HEX), ("AHx", jpeg(), codestream.NOT_HEX),
     ("ASCII85Decode", b"abc{~>", codestream.NOT_A85),
     ("A85", b"<~87cUz RD]i~>", codestream.A85_Z_IN_GROUP)],
)  # fmt: skip
def test_ascii_data_with_a_character_its_decoder_refuses_is_undecodable(codec, data, detail):
    """ASCIIHex and ASCII85 have no signature to mismatch: MuPDF calls such data bad ("bad data
    in ahxd"). The detail names no source byte."""
    with pytest.raises(Quarantined) as caught:
        validation.check_codec(codec, data)
    assert (caught.value.reason, caught.value.detail) == ("undecodable", detail)


def test_an_ascii85_z_is_whole_groups_only():
    assert codestream.text_fault("ASCII85Decode", b"z87cURz  zD]i~>") is None
    assert codestream.text_fault("ASCII85Decode", b"87cURD]i~z>") is None  # past its end


def test_an_empty_stream_is_truncated_and_unknown_codecs_are_not_checked():
    assert reason(validation.check_codec, "DCTDecode", b"") == "truncated"
    assert validation.check_codec("CCITTFaxDecode", b"\x00" * 9) is None
    assert validation.check_codec("LZWDecode", b"") is None


def test_a_flate_wrapped_jpx_whose_siz_disagrees_is_stopped_before_decode():
    raw = zlib.compress(enc.j2k_header(16000, 16000))
    filters = ("FlateDecode", "JPXDecode")
    with pytest.raises(Quarantined) as caught:
        validation.check_codestream(raw, filters, ["", ""], (100, 100), Limits())
    assert caught.value.reason == "dimension_mismatch"
    assert "16000x16000" in caught.value.detail


def test_the_last_codec_must_match_the_decoded_prefix():
    raw = zlib.compress(b"\x89PNG\r\n\x1a\n" + bytes(100))
    assert (
        reason(
            validation.check_codestream,
            raw,
            ("FlateDecode", "DCTDecode"),
            ["", ""],
            (1, 1),
            Limits(),
        )
        == "signature_mismatch"
    )


def test_matching_header_sizes_still_meet_the_caps():
    data = enc.j2k_header(30_000, 10)
    assert (
        reason(validation.check_codestream, data, ("JPXDecode",), [""], (30_000, 10), Limits())
        == "dimensions_exceed_cap"
    )


def test_a_header_beyond_the_prefix_limit_is_undecodable_and_a_cut_one_truncated():
    comments = (b"\xff\xfe\xff\xff" + bytes(65533)) * 5  # 320 KiB before the frame header
    raw = zlib.compress(b"\xff\xd8" + comments + jpeg()[2:])
    filters = ("FlateDecode", "DCTDecode")
    check = validation.check_codestream
    assert reason(check, raw, filters, ["", ""], (40, 30), Limits()) == "undecodable"
    cut = zlib.compress(b"\xff\xd8" + comments[:100_000])
    assert reason(check, cut, filters, ["", ""], (40, 30), Limits()) == "truncated"
    assert len(comments) > prefix.PREFIX_LIMIT


@pytest.mark.parametrize(
    ("parms", "size"),
    [("<</K -1/Columns 64/Rows 48>>", (64, 48)), ("<</K -1/Columns 64>>", (64, 48)),
     ("", (1728, 9)), ("<</Columns 1728/Rows 0>>", (1728, 9))],
)  # fmt: skip
def test_ccitt_columns_and_rows_are_its_header_size(parms, size):
    validation.check_codestream(b"\x00", ("CCITTFaxDecode",), [parms], size, Limits())


@pytest.mark.parametrize(
    ("filters", "parms", "size", "expected"),
    [(("CCITTFaxDecode",), ["<</K -1/Columns 128/Rows 48>>"], (64, 48), "dimension_mismatch"),
     (("CCF",), ["<</K -1/Columns 64/Rows 47/EndOfBlock false>>"], (64, 48),
      "dimension_mismatch"),
     (("CCITTFaxDecode",), [""], (64, 48), "dimension_mismatch"),
     (("FlateDecode", "CCITTFaxDecode"), ["", "<</Columns 128>>"], (64, 48), "dimension_mismatch"),
     (("CCITTFaxDecode",), ["<</Columns 30000>>"], (30000, 10), "dimensions_exceed_cap"),
     (("CCITTFaxDecode",), ["<</Columns 19000/Rows 19000>>"], (19000, 19000),
      "pixel_cap_exceeded")],
)  # fmt: skip
def test_ccitt_parameters_that_contradict_the_dictionary_or_the_caps_stop_the_image(
    filters, parms, size, expected
):
    raw = zlib.compress(b"\x00") if filters[0] == "FlateDecode" else b"\x00"
    assert reason(validation.check_codestream, raw, filters, parms, size, Limits()) == expected


def test_ccitt_size_defaults_to_1728_columns_and_an_open_height():
    assert validation.fax_size("") == (1728, None)
    assert validation.fax_size("<</K -1/Columns 64/Rows 48>>") == (64, 48)


def test_a_jpeg_states_its_precision_and_components_in_its_frame_header():
    gray = io.BytesIO()
    Image.new("L", (8, 8)).save(gray, "JPEG")
    assert codestream.jpeg_frame(jpeg()) == (8, 3)
    assert codestream.jpeg_frame(gray.getvalue()) == (8, 1)
    assert codestream.jpeg_frame(_colour.twelve_bit(gray.getvalue())) == (12, 1)


@pytest.mark.parametrize("options", [{}, {"progressive": True}, {"quality": 100}])
def test_a_whole_jpeg_reaches_its_eoi_and_a_cut_one_does_not(options):
    data = jpeg(300, 200, **options)
    assert codestream.jpeg_reaches_eoi(data)
    assert codestream.jpeg_reaches_eoi(data + b"\r\n")  # what may follow it in a PDF stream
    assert not codestream.jpeg_reaches_eoi(data[: len(data) * 2 // 3])
    assert not codestream.jpeg_reaches_eoi(data[:-1])


def test_an_eoi_inside_a_segment_is_not_the_streams():
    thumbnail = b"\xff\xd8" + b"\x00" * 8 + b"\xff\xd9"  # an EXIF thumbnail's own EOI
    app1 = b"\xff\xe1" + struct.pack(">H", len(thumbnail) + 2) + thumbnail
    data = jpeg()
    cut = data[:2] + app1 + data[2 : len(data) // 2]
    assert not codestream.jpeg_reaches_eoi(cut)
    assert codestream.jpeg_reaches_eoi(data[:2] + app1 + data[2:])


def test_ascii85_data_ending_with_a_tilde_and_no_bracket_is_ascii85():
    """MuPDF decodes it in full: its `~` ends the data ("bad eod marker in a85d")."""
    assert codestream.sniff("ASCII85Decode", b"87cURD]i~") == "text/x-ascii85"
    assert codestream.sniff("A85", b"<~87cURD]i~") == "text/x-ascii85"
    assert codestream.sniff("ASCII85Decode", b"87cUR\xffD]i~>") is None

"""The bounded prefix decoders: round trips with the fixtures' encoders, limits, garbage."""

import base64
import zlib

import pytest

from fixtures import _encoders as enc
from report_pipeline.core.validate import prefix
from report_pipeline.core.validate.validation import Quarantined

pytestmark = pytest.mark.slow


def reason(call, *args) -> str:
    with pytest.raises(Quarantined) as caught:
        call(*args)
    return caught.value.reason


PAYLOAD = bytes(range(256)) * 700 + b"tail" * 9000  # 215 KiB, compressible and not


@pytest.mark.parametrize(
    ("name", "encode"),
    [("FlateDecode", zlib.compress), ("ASCIIHexDecode", enc.ascii_hex),
     ("ASCII85Decode", enc.ascii85), ("LZWDecode", enc.lzw), ("RunLengthDecode", enc.run_length)],
)  # fmt: skip
def test_prefix_decoders_round_trip_and_stop_at_the_limit(name, encode):
    assert prefix.decode_prefix(encode(PAYLOAD), [name], [""], len(PAYLOAD) + 1) == (PAYLOAD, True)
    assert prefix.decode_prefix(encode(PAYLOAD), [name], [""], 1000) == (PAYLOAD[:1000], False)


def test_lzw_without_early_change_widens_its_codes_one_code_later():
    # With EarlyChange 0 the table reaches 512 entries (10-bit codes) after the 255th code.
    codes = [(256, 9)] + [(97, 9)] * 255 + [(97, 10)] * 45 + [(257, 10)]
    data = enc._pack_bits(codes)
    assert prefix.lzw(data, 10_000, "<</EarlyChange 0>>") == (b"a" * 300, True)
    assert prefix.lzw(data, 10_000, "")[0] != b"a" * 300  # EarlyChange 1 widens a code sooner


def test_ascii85_handles_z_and_a_short_final_group():
    expected = base64.a85decode(b"z87cURD]i")
    assert prefix.ascii85(b"<~z 87cURD]i~>", 100, "") == (expected, True)
    assert expected == b"\x00" * 4 + b"Hello "


@pytest.mark.parametrize(
    ("name", "data"),
    [("FlateDecode", b"\x78\x9c garbage"), ("ASCIIHexDecode", b"zz>"),
     ("ASCII85Decode", b"abc{"), ("ASCII85Decode", b"a~>"), ("ASCII85Decode", b"uuuuu~>"),
     ("LZWDecode", b"\xff\xff\xff"), ("DCTDecode", b"\xff\xd8\xff")],
)  # fmt: skip
def test_garbage_in_a_prefix_filter_is_undecodable(name, data):
    assert reason(prefix.decode_prefix, data, [name], [""]) == "undecodable"


def test_truncated_prefix_input_gives_what_is_there():
    stream = zlib.compress(PAYLOAD)
    assert (
        prefix.decode_prefix(stream[:100], ["FlateDecode"], [""])[0]
        == PAYLOAD[: len(zlib.decompressobj().decompress(stream[:100]))]
    )
    assert prefix.run_length(b"\x05abc", 100, "") == (b"abc", True)


def test_a_predictor_is_undone_within_the_prefix_limit():
    stream = zlib.compress(enc.png_predict(PAYLOAD, 64))
    parms = ["<</Predictor 12/Columns 64>>"]
    assert prefix.decode_prefix(stream, ["FlateDecode"], parms) == (PAYLOAD, True)
    head, complete = prefix.decode_prefix(stream, ["FlateDecode"], parms, 1000)
    assert (head, complete) == (PAYLOAD[: len(head)], False) and 900 < len(head) < 1000


def test_ascii85_data_ends_at_its_tilde_with_or_without_the_closing_bracket():
    """MuPDF ends ASCII85 data at `~` ("bad eod marker in a85d" when no `>` follows)."""
    expected = base64.a85decode(b"87cURD]i")
    assert prefix.ascii85(b"87cURD]i~", 100, "") == (expected, True)
    assert prefix.ascii85(b"87cURD]i~x garbage", 100, "") == (expected, True)

"""Complete streams MuPDF cannot draw get the reason that says why, not `truncated` or
`signature_mismatch` (issue 30, crafted round 6): ASCIIHex or ASCII85 data with a character its
decoder refuses is `undecodable` (core/validate/shortfall.py, codestream.py)."""

from __future__ import annotations

import base64
import binascii
import zlib

import pymupdf
import pytest

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.validate.codestream import A85_Z_IN_GROUP, NOT_A85, NOT_HEX
from report_pipeline.core.validate.per_image import process_image

pytestmark = pytest.mark.slow

SIDE = 8


def outcome_of(space: bytes, data: bytes, extra: bytes = b"", *streams: bytes):
    """The outcome of one SIDE x SIDE 8-bit image of colour space `space` and stream `data`;
    `streams` are added first (objects 3, 4, ...) for `space` to refer to."""
    objects = Objects()
    for body in streams:
        objects.add(body)
    drawn = objects.add(stream(b"/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace %s"
                               b"/BitsPerComponent 8%s" % (SIDE, SIDE, space, extra),
                               data))  # fmt: skip
    objects.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open("pdf", objects.pdf()) as doc:
        (ref,) = page_images(doc, 1)
        return process_image(doc, ref, Limits()).outcome


def samples(components: int) -> bytes:
    return bytes((7 * k) % 256 for k in range(SIDE * SIDE * components))


HEX = binascii.hexlify(samples(1))
A85 = base64.a85encode(samples(1))


@pytest.mark.parametrize(
    ("filters", "data", "detail"),
    [(b"/ASCIIHexDecode", HEX[:24] + b"zz" + HEX[24:] + b">", NOT_HEX),
     (b"/AHx", HEX + b"g>", NOT_HEX),
     (b"[/ASCIIHexDecode/FlateDecode]", b"78 9c q>", NOT_HEX),
     (b"/ASCII85Decode", A85[:10] + b"{" + A85[10:] + b"~>", NOT_A85),
     (b"/ASCII85Decode", A85[:10] + b"v" + A85[10:] + b"~>", NOT_A85),
     (b"/ASCII85Decode", A85[:2] + b"z" + A85[2:] + b"~>", A85_Z_IN_GROUP)],
    ids=["hex_zz", "hex_g", "hex_before_flate", "a85_brace", "a85_v", "a85_z_in_group"],
)  # fmt: skip
def test_ascii_data_with_a_character_its_decoder_refuses_is_undecodable(filters, data, detail):
    """MuPDF: "bad data in ahxd: 'z'", "bad data in a85d: '{'"; the detail names no source
    byte."""
    outcome = outcome_of(b"/DeviceGray", data, b"/Filter" + filters)
    assert (outcome.reason, outcome.detail) == ("undecodable", detail)


def test_bad_ascii_data_past_the_prefix_is_undecodable_as_mupdf_says(tmp_path, store):
    """A Flate stream of ASCIIHex data whose bad character lies past the 256 KiB prefix the
    checks before the decode read: MuPDF's "bad data in ahxd" says it, through the pipeline."""
    side = 256
    text = binascii.hexlify(bytes(k % 251 for k in range(side * side * 3)))
    data = zlib.compress(text[:-8] + b"zz" + text[-8:] + b">")
    objects = Objects()
    drawn = objects.add(stream(b"/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace"
                               b"/DeviceRGB/BitsPerComponent 8/Filter[/FlateDecode"
                               b"/ASCIIHexDecode]" % (side, side), data))  # fmt: skip
    objects.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    path = tmp_path / "hex.pdf"
    path.write_bytes(objects.pdf())
    manifest = run_report(store, path, PipelineSettings(tmp_path / "w"), "inbox", "2026-10")
    (child,) = manifest.children
    assert (child.quarantine_reason, child.quarantine_detail) == ("undecodable", NOT_HEX)


def test_binary_codecs_keep_their_signature_mismatch():
    outcome = outcome_of(b"/DeviceGray", HEX + b">", b"/Filter/DCTDecode")
    assert (outcome.reason, outcome.detail) == (
        "signature_mismatch", "declared DCTDecode but the bytes are text/plain"
    )  # fmt: skip

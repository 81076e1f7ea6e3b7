"""Complete streams MuPDF cannot draw get the reason that says why, not `truncated` or
`signature_mismatch` (issue 30, crafted round 6): an /ICCBased image MuPDF draws in a wider
/Alternate is `colorspace_mismatch`, ASCIIHex or ASCII85 data with a character its decoder
refuses is `undecodable` (core/validate/shortfall.py, codestream.py)."""

from __future__ import annotations

import base64
import binascii
import io
import zlib

import pymupdf
import pytest
from PIL import Image, ImageCms

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.validate.codestream import A85_Z_IN_GROUP, NOT_A85, NOT_HEX
from report_pipeline.core.validate.per_image import process_image

pytestmark = pytest.mark.slow

SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
JUNK = b"not an ICC profile " * 8
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


def icc(n: int, profile: bytes, alternate: bytes = b"") -> bytes:
    return stream(b"/N %d%s" % (n, alternate), profile)


@pytest.mark.parametrize(
    ("profile", "declared", "alternate", "used"),
    [(JUNK, 1, b"/DeviceRGB", 3),  # MuPDF: "ignoring broken ICC profile"
     (SRGB, 1, b"/DeviceRGB", 3),  # "ICC colorspace N=1 does not match profile N=3"
     (SRGB, 3, b"/DeviceCMYK", 4),  # "ICC profile (N=3) is not CMYK"
     (JUNK, 1, b"/DeviceCMYK", 4)],
    ids=["junk_profile", "profile_of_other_n", "profile_not_the_alternates_kind", "junk_cmyk"],
)  # fmt: skip
def test_an_icc_image_drawn_in_a_wider_alternate_is_a_colorspace_mismatch(
    profile, declared, alternate, used
):
    """MuPDF pads the samples (its "padding truncated image"), though the stream holds every
    sample /N makes: the colour space it draws in takes more."""
    space = b"[/ICCBased 3 0 R]"
    outcome = outcome_of(space, samples(declared), b"", icc(declared, profile, b"/Alternate" +
                                                            alternate))  # fmt: skip
    assert (outcome.state, outcome.reason) == ("quarantined", "colorspace_mismatch")
    assert f"declares {declared} colour component" in outcome.detail
    assert f"(/N {declared})" in outcome.detail and outcome.detail.endswith(f"takes {used}")


@pytest.mark.parametrize(
    ("filters", "encode"),
    [(b"/Filter/FlateDecode", zlib.compress),
     (b"/Filter/ASCIIHexDecode", lambda data: binascii.hexlify(data) + b">"),
     (b"/Filter[/ASCII85Decode/RunLengthDecode]",
      lambda data: base64.a85encode(bytes([127]) + data[:128]) + b"~>")],
    ids=["flate", "asciihex", "a85_runlength"],
)  # fmt: skip
def test_the_samples_are_counted_through_the_filters(filters, encode):
    """Read through MuPDF's own filters, at most the bytes /N makes (SIDE x SIDE, 64 here)."""
    extra = icc(1, JUNK, b"/Alternate/DeviceRGB")
    outcome = outcome_of(b"[/ICCBased 3 0 R]", encode(samples(1)), filters, extra)
    assert (outcome.reason, outcome.detail.endswith("takes 3")) == ("colorspace_mismatch", True)


@pytest.mark.parametrize(
    ("mode", "profile", "alternate", "used"),
    [("L", JUNK, b"/DeviceRGB", 3), ("RGB", SRGB, b"/DeviceCMYK", 4)],
    ids=["gray_in_rgb", "rgb_in_cmyk"],
)  # fmt: skip
def test_a_whole_icc_jpeg_drawn_in_a_wider_alternate_is_a_colorspace_mismatch(
    mode, profile, alternate, used
):
    """Not `undecodable` ("the JPEG is complete but does not decode"): its codestream has the
    components /N declares, the /Alternate MuPDF draws it in takes more."""
    jpeg = io.BytesIO()
    Image.new(mode, (SIDE, SIDE), 90).save(jpeg, "JPEG")
    declared = len(mode)
    extra = icc(declared, profile, b"/Alternate" + alternate)
    outcome = outcome_of(b"[/ICCBased 3 0 R]", jpeg.getvalue(), b"/Filter/DCTDecode", extra)
    assert (outcome.reason, outcome.detail.endswith(f"takes {used}")) == (
        "colorspace_mismatch", True,
    )  # fmt: skip
    assert f"(/N {declared})" in outcome.detail


def test_an_icc_image_short_for_its_own_n_stays_truncated():
    """/N 3 drawn in a 3-component /Alternate, one component's samples: the stream ended early
    for the space it declares, whatever MuPDF draws it in."""
    extra = icc(3, JUNK, b"/Alternate/DeviceRGB")
    outcome = outcome_of(b"[/ICCBased 3 0 R]", samples(1), b"", extra)
    padded = "MuPDF had to pad a short image stream"
    assert (outcome.reason, outcome.detail) == ("truncated", padded)
    extra = icc(1, JUNK, b"/Alternate/DeviceRGB")
    outcome = outcome_of(b"[/ICCBased 3 0 R]", samples(1)[:40], b"", extra)  # short for /N 1
    assert outcome.reason == "truncated"


@pytest.mark.parametrize(
    ("profile", "alternate", "components"),
    [(SRGB, b"", 3), (JUNK, b"/Alternate/DeviceRGB", 3), (SRGB, b"/Alternate/DeviceGray", 3)],
    ids=["its_profile", "an_alternate_as_wide", "a_narrower_alternate"],
)  # fmt: skip
def test_an_icc_image_mupdf_draws_whole_is_archived(profile, alternate, components):
    extra = icc(components, profile, alternate)
    outcome = outcome_of(b"[/ICCBased 3 0 R]", samples(components), b"", extra)
    assert (outcome.state, outcome.reason) == ("validated", None)


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


@pytest.mark.parametrize(
    ("data", "reason", "opening"),
    [(b"<~" + A85 + b"~>", "undecodable", True),  # PostScript's opening: MuPDF reads < as data
     (b" <~" + A85, "undecodable", True),
     (A85[:20] + b"~" + A85[20:] + b"~>", "undecodable", False),  # a ~ before more data
     (A85[:20] + b"~", "truncated", False),  # the data ends at its ~: it is short
     (A85[:20] + b"~>", "truncated", False)],
    ids=["ps_opening", "ps_opening_no_end", "tilde_mid_data", "short_tilde", "short_marker"],
)  # fmt: skip
def test_ascii85_data_mupdf_ends_at_a_tilde_before_more_data_is_undecodable(data, reason, opening):
    """MuPDF ends ASCII85 data at its first ~ ("bad eod marker in a85d" when no > follows) and
    pads the image: the stream did not end early, the data goes on past that ~ (crafted round
    10: `<~` was `truncated`, "MuPDF had to pad a short image stream"). Data that really ends
    short stays `truncated`."""
    outcome = outcome_of(b"/DeviceGray", data, b"/Filter/ASCII85Decode")
    assert outcome.reason == reason
    if reason == "undecodable":
        assert outcome.detail.startswith("ASCII85Decode data holds a ~ that is not its end marker")
        assert ("PostScript's <~" in outcome.detail) == opening


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

"""Colour as the page draws it, archived files that hold pixels only, and reasons that say why.

colour_cases.pdf has one page per case (fixtures/_colour.py COLOUR_CASES order): embedded ICC
profiles (garbage claiming 0xFFFFFFF0 bytes, unreadable, a valid Adobe RGB-like one), JPEGs whose
components disagree with the declared colour space, a 12-bit JPEG and a complete JPEG with a
bogus Huffman table. MuPDF's rendering of the page is the reference for every archived pixel.
"""

from __future__ import annotations

import io
import struct

import pymupdf
import pytest
from PIL import Image, PngImagePlugin

from fixtures import _classes, _colour, _icc
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.review.decide import LIFTABLE
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.validate import icc, normalize, shortfall
from report_pipeline.core.validate.icc import MAX_PROFILE_BYTES
from report_pipeline.core.validate.quarantine import Quarantined
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.core.test_image_classes import child_on, mupdf_pixels, run_once

pytestmark = pytest.mark.slow

NAME = "colour_cases.pdf"
CASES = list(_colour.COLOUR_CASES)
ARCHIVED = [name for name, outcome in _colour.OUTCOMES.items() if outcome[0] == "archived"]
PIXELS_ONLY = [b"IHDR", b"IDAT", b"IEND"]


@pytest.fixture(scope="module")
def colour_run(shared_run):
    return run_once(shared_run, NAME)


@pytest.fixture(scope="module")
def colour_doc():
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        yield doc


def page_of(name: str) -> int:
    return CASES.index(name) + 1


def chunk_types(png: bytes) -> list[bytes]:
    """The PNG's chunk types in order, IDAT runs folded into one."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    types, at = [], 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at : at + 8])
        if not types or types[-1] != kind:
            types.append(kind)
        at += 12 + length
    return types


def opened_with_defaults(png: bytes) -> Image.Image:
    assert PngImagePlugin.MAX_TEXT_CHUNK == 1 << 20  # Pillow's default, as every reader has it
    image = Image.open(io.BytesIO(png))
    image.load()
    return image


def rendered(doc: pymupdf.Document, page: int, mode: str) -> Image.Image:
    """What MuPDF's renderer paints of the page's image, one sample at each pixel's centre
    (the image is drawn 4x its size: no resampling blurs a pixel into its neighbours)."""
    space = pymupdf.csGRAY if mode == "L" else pymupdf.csRGB
    pix = doc[page - 1].get_pixmap(clip=pymupdf.Rect(*_classes.RECT), colorspace=space)
    painted = Image.frombytes(mode, (pix.width, pix.height), pix.samples)
    width, height = _classes.SIZE
    scale_x, scale_y = pix.width / width, pix.height / height
    boxes = [(int((x + 0.5) * scale_x), int((y + 0.5) * scale_y)) for y in range(height)
             for x in range(width)]  # fmt: skip
    sampled = Image.new(mode, _classes.SIZE)
    sampled.putdata([painted.getpixel(box) for box in boxes])
    return sampled


def mean_difference(a: Image.Image, b: Image.Image) -> float:
    pairs = zip(a.tobytes(), b.tobytes(), strict=True)
    return sum(abs(x - y) for x, y in pairs) / len(a.tobytes())


@pytest.mark.parametrize("name", CASES)
def test_each_colour_case_ends_as_its_fixture_says(name, colour_run):
    _, manifest = colour_run
    state, reason, said, mode = _colour.OUTCOMES[name]
    child = child_on(manifest, page_of(name))
    assert (child.state, child.quarantine_reason, child.mode) == (state, reason, mode)
    assert said in (child.quarantine_detail or child.notes)


@pytest.mark.parametrize("name", ARCHIVED)
def test_archived_pixels_are_what_mupdf_draws_on_the_page(name, colour_run, colour_doc):
    """Within rounding: Pillow's libjpeg-turbo, which decodes a plain JPEG, and MuPDF's libjpeg
    round the inverse DCT apart (here a mean of 0.5 levels, at most 7)."""
    store, manifest = colour_run
    child = child_on(manifest, page_of(name))
    archived = opened_with_defaults(store.get_bytes(child.object_key, 1 << 26))
    xref = colour_doc[page_of(name) - 1].get_images()[0][0]
    assert mean_difference(archived, mupdf_pixels(colour_doc, xref)) < 1.0
    assert mean_difference(archived, rendered(colour_doc, page_of(name), archived.mode)) < 1.0


@pytest.mark.parametrize("name", ARCHIVED)
def test_an_archived_png_holds_pixels_and_no_source_chunks(name, colour_run):
    store, manifest = colour_run
    png = store.get_bytes(child_on(manifest, page_of(name)).object_key, 1 << 26)
    assert chunk_types(png) == PIXELS_ONLY  # no iCCP, eXIf, tEXt, zTXt, iTXt, pHYs or tRNS


def test_an_rgb_jpeg_declared_gray_is_archived_gray_as_the_page_draws_it(colour_run, colour_doc):
    store, manifest = colour_run
    page = page_of("rgb_jpeg_declared_gray")
    child = child_on(manifest, page)
    archived = opened_with_defaults(store.get_bytes(child.object_key, 1 << 26))
    xref = colour_doc[page - 1].get_images()[0][0]
    as_pillow_decodes = Image.open(io.BytesIO(colour_doc.xref_stream_raw(xref))).convert("L")
    assert archived.mode == "L"
    assert mean_difference(as_pillow_decodes, rendered(colour_doc, page, "L")) > 20  # not it


def test_the_notes_say_what_became_of_each_embedded_profile(colour_run):
    _, manifest = colour_run
    notes = {name: child_on(manifest, page_of(name)).notes for name in CASES}
    assert notes["icc_claims_4gib"] == (
        f"embedded ICC profile dropped: {_colour.GARBAGE_PROFILE_BYTES:,} bytes whose header "
        f"claims {_icc.CLAIMED:,}, over the {MAX_PROFILE_BYTES:,}-byte cap"
    )
    assert notes["icc_unreadable"].endswith("bytes LittleCMS cannot read")
    assert notes["icc_adobe_rgb"].startswith(f"embedded ICC profile ({len(_icc.rgb_profile())} "
                                             "bytes, RGB) not applied")  # fmt: skip
    assert [name for name, note in notes.items() if note] == CASES[:3]


def test_a_complete_stream_is_not_called_truncated(colour_run):
    _, manifest = colour_run
    reasons = {c.quarantine_reason for c in manifest.children if c.state == "quarantined"}
    assert reasons == {"colorspace_mismatch", "unsupported_precision", "undecodable"}
    assert manifest.state == "complete"


@pytest.mark.parametrize("reason", ["colorspace_mismatch", "unsupported_precision"])
def test_a_reviewer_cannot_accept_an_image_its_page_cannot_draw(reason):
    assert reason not in LIFTABLE  # accepting would archive pixels the page never shows


def test_a_16_mb_garbage_profile_leaves_a_png_pillow_opens_with_its_defaults(tmp_path):
    """The issue's file: 255 APP2 segments of garbage whose header claims 0xFFFFFFF0 bytes
    (built here, not committed: 16.7 MB). Its profile once became the PNG's iCCP chunk."""
    size = 255 * 65519  # the most APP2 segments a JPEG's one-byte sequence numbers count
    data = _colour.with_profile(_icc.garbage_profile(size))
    assert len(Image.open(io.BytesIO(data)).info["icc_profile"]) == size
    build = {"garbage": lambda doc: _colour.declared("/DeviceRGB", data)}
    path = tmp_path / "garbage_profile.pdf"
    path.write_bytes(_classes.one_image_per_page(build, "Colour case"))
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived"
    assert child.notes.startswith(f"embedded ICC profile dropped: {size:,} bytes")
    png = store.get_bytes(child.object_key, 1 << 26)
    assert chunk_types(png) == PIXELS_ONLY
    with pymupdf.open(path) as doc:
        expected = mupdf_pixels(doc, doc[0].get_images()[0][0])
    assert mean_difference(opened_with_defaults(png), expected) < 1.0  # Pillow decoded it


def test_encode_png_writes_pixels_only_whatever_the_decoded_image_carried():
    image = Image.new("RGB", (4, 3), (200, 10, 10))
    image.info.update({
        "icc_profile": _icc.rgb_profile(), "exif": b"Exif\0\0MM\0*\0\0\0\x08\0\0",
        "dpi": (300, 300), "transparency": (0, 0, 0), "comment": b"source text",
    })  # fmt: skip
    for picture in (image, image.convert("L"), image.convert("RGBA"), image.convert("1")):
        png = normalize.encode_png(picture).png
        assert chunk_types(png) == PIXELS_ONLY, picture.mode
        assert opened_with_defaults(png).tobytes() == picture.tobytes()


def with_profile(profile: bytes | None) -> Image.Image:
    image = Image.new("RGB", (2, 2))
    if profile is not None:
        image.info["icc_profile"] = profile
    return image


@pytest.mark.parametrize(
    ("profile", "note"),
    [(None, ""), (b"", ""),
     (_icc.rgb_profile(), "embedded ICC profile (512 bytes, RGB) not applied"),
     (_icc.unreadable_profile(), "embedded ICC profile dropped: 144 bytes LittleCMS cannot read"),
     (bytes(12), "embedded ICC profile dropped: 12 bytes LittleCMS cannot read"),
     (_icc.garbage_profile(64), "whose header claims 4,294,967,280, over the 1,048,576-byte cap"),
     (bytes(4) + bytes(MAX_PROFILE_BYTES),
      f"dropped: {MAX_PROFILE_BYTES + 4:,} bytes whose header claims 0, over the")],
)  # fmt: skip
def test_an_embedded_profile_is_dropped_over_its_cap_or_unreadable_never_applied(profile, note):
    said = icc.profile_note(with_profile(profile))
    assert note in said and bool(said) == bool(note)


def test_a_profile_at_the_cap_is_read_by_littlecms():
    padded = bytearray(_icc.rgb_profile() + bytes(MAX_PROFILE_BYTES - 512))
    padded[:4] = MAX_PROFILE_BYTES.to_bytes(4, "big")
    assert "not applied" in icc.profile_note(with_profile(bytes(padded)))


PADDED = Quarantined("truncated", "MuPDF had to pad a short image stream")
RAISED = Quarantined("undecodable", "MuPDF could not decode: RuntimeError")


def gray_jpeg() -> bytes:
    return _colour.jpeg(Image.new("L", (16, 16), 90))


@pytest.mark.parametrize(
    ("fallback", "jpeg", "whole", "declared", "reason"),
    [(PADDED, None, True, 3, "truncated"),
     (PADDED, gray_jpeg()[:-40], True, 1, "truncated"),
     (PADDED, gray_jpeg()[:-40], True, 4, "colorspace_mismatch"),
     (RAISED, gray_jpeg(), True, 3, "colorspace_mismatch"),
     (PADDED, _colour.twelve_bit(gray_jpeg())[:-40], True, 1, "unsupported_precision"),
     (RAISED, _colour.twelve_bit(gray_jpeg()), True, 1, "unsupported_precision"),
     (PADDED, gray_jpeg(), True, 1, "undecodable"),
     (PADDED, gray_jpeg(), False, 1, "truncated"),  # a prefix: its end is not the stream's
     (RAISED, gray_jpeg(), True, 1, "undecodable"),
     (PADDED, _colour.jpeg(Image.new("CMYK", (16, 16))), True, 3, "undecodable"),
     (PADDED, b"\xff\xd8\xff\xd9", True, 1, "truncated")],  # no frame header to tell from
)  # fmt: skip
def test_a_failed_decode_gets_the_reason_its_jpeg_gives(fallback, jpeg, whole, declared, reason):
    said = "library error: jpeg error: Bogus marker length\npadding truncated image"
    assert shortfall.explain(fallback, jpeg, whole, declared, said).reason == reason


def test_a_complete_jpeg_that_does_not_decode_says_what_libjpeg_said():
    said = "library error: jpeg error: Bogus Huffman table definition\nread error"
    detail = shortfall.explain(PADDED, gray_jpeg(), True, 1, said).detail
    expected = "the JPEG is complete (it reaches EOI) but does not decode: Bogus Huffman table"
    assert detail == f"{expected} definition"


@pytest.mark.parametrize(
    ("fallback", "codec", "declared", "bpc", "reason"),
    [(PADDED, "JBIG2Decode", 3, 8, "colorspace_mismatch"),
     (PADDED, "JBIG2Decode", 1, 8, "colorspace_mismatch"),  # 8 bits a pixel, 1 given
     (PADDED, "CCITTFaxDecode", 3, 1, "colorspace_mismatch"),
     (PADDED, "JBIG2Decode", 1, 1, "truncated"),  # what it declares it gets: really short
     (PADDED, "JBIG2Decode", None, 1, "truncated"),  # a stencil mask, or a space not told
     (RAISED, "JBIG2Decode", 3, 8, "undecodable"),  # not padded: nothing to explain
     (PADDED, "FlateDecode", 3, 8, "truncated")],
)  # fmt: skip
def test_a_bilevel_codec_under_a_wider_declared_space_is_a_colorspace_mismatch(
    fallback, codec, declared, bpc, reason
):
    """JBIG2 and CCITT fax decode to one 1-bit component a pixel: a complete stream declared
    /DeviceRGB with 8 bits a component leaves MuPDF short, and it pads. Not `truncated`."""
    assert shortfall.bilevel(fallback, codec, declared, bpc).reason == reason

"""Inline images get the checks an image object gets, on their own bytes, before any decode."""

import random
import zlib

import pymupdf
import pytest

from fixtures import _images as img
from fixtures._encoders import ascii_hex, jpeg_with_sof
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.validate.per_image import process_image
from report_pipeline_tests.conftest import fixture_pdf

INLINE_PAGE = 6  # image_paths.pdf: one inline image drawn on the page
JPEG = img.photo_jpeg(random.Random(5), (64, 48))


def inline_jpeg(data: bytes) -> bytes:
    hexed = ascii_hex(data)
    return (
        b"q 64 0 0 48 100 600 cm BI /W 64 /H 48 /CS /RGB /BPC 8 /F [/AHx /DCT] ID "
        + hexed
        + b" EI Q"
    )


@pytest.mark.parametrize(
    ("data", "state", "reason"),
    [
        (JPEG, "validated", None),
        (jpeg_with_sof(JPEG, 16000, 16000), "quarantined", "dimension_mismatch"),
        (b"\x89PNG\r\n\x1a\n" + JPEG[8:], "quarantined", "signature_mismatch"),
    ],
)
def test_an_inline_jpeg_is_checked_like_an_image_object(data, state, reason):
    with pymupdf.open(fixture_pdf("image_paths.pdf")) as doc:
        doc.update_stream(doc[INLINE_PAGE - 1].get_contents()[0], inline_jpeg(data))
        (ref,) = page_images(doc, INLINE_PAGE)
        outcome = process_image(doc, ref, Limits()).outcome
    assert (ref.origin, outcome.declared_type) == ("inline", "jpeg")
    assert (outcome.state, outcome.reason) == (state, reason)


STORED = zlib.compress(bytes(range(64)), 0)  # an 8x8 gray image, deflate's stored block


@pytest.mark.parametrize(
    ("data", "reason", "detail"),
    [
        # qpdf's damaged-inline-image.pdf: complete data zlib calls corrupt, as its image object
        (STORED[:2] + b"\x04" + STORED[3:], "undecodable", "flate stream is corrupt"),
        (STORED[:30], "truncated", "MuPDF had to pad"),  # it runs out
    ],
    ids=["corrupt", "short"],
)
def test_an_inline_flate_image_is_truncated_only_when_its_data_runs_out(data, reason, detail):
    content = b"q 8 0 0 8 100 600 cm BI /W 8 /H 8 /CS /G /BPC 8 /F [/AHx /Fl] ID %s EI Q"
    with pymupdf.open(fixture_pdf("image_paths.pdf")) as doc:
        doc.update_stream(doc[INLINE_PAGE - 1].get_contents()[0], content % ascii_hex(data))
        (ref,) = page_images(doc, INLINE_PAGE)
        outcome = process_image(doc, ref, Limits()).outcome
    assert (outcome.state, outcome.reason) == ("quarantined", reason)
    assert outcome.detail.startswith(detail)

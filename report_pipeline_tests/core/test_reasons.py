"""Reasons that say what happened (fixtures/_reasons.py): a mask reference that is no stream, a
size that is no integer, a /JBIG2Globals page over the caps, a lost document catalog."""

from __future__ import annotations

import zlib

import pymupdf
import pytest

from fixtures import _reasons as reasons
from fixtures._objects import Objects, image
from fixtures._trees import CATALOG, PAGE, classic_pdf
from report_pipeline.core.intake.intake import RefusedInput, inspect_pdf
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.validate.per_image import process_image

pytestmark = pytest.mark.slow


def test_each_case_gets_the_reason_that_names_its_flaw(shared_run):
    _, manifest = shared_run("misleading_reasons.pdf")
    assert manifest.state == "complete"
    for child, (name, (state, reason, detail)) in zip(
        manifest.children, reasons.OUTCOMES.items(), strict=True
    ):
        assert (child.state, child.quarantine_reason) == (state, reason), name
        assert detail is None or detail in child.quarantine_detail, (name, child)
    by_reference = manifest.children[1]
    assert (by_reference.width, by_reference.height) == (64, 48)  # read through the reference


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (b"8.0", ("archived", None, 8)),  # a whole number written as a real: MuPDF draws 8 wide
        (b"8.7", ("quarantined", "/Width 8.7 is not an integer", -1)),  # MuPDF pads it to 9
    ],
)
def test_a_width_that_is_a_real_number(tmp_path, store, width, expected):
    pixels = zlib.compress(bytes(64 * 48), 9)
    image = (b"<</Type/XObject/Subtype/Image/Width %s/Height 48/ColorSpace/DeviceGray"
             b"/BitsPerComponent 8/Filter/FlateDecode/Length %d>>\nstream\n%s\nendstream"
             % (width, len(pixels), pixels))  # fmt: skip
    page = (b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]/Contents 5 0 R"
            b"/Resources<</XObject<</Im 4 0 R>>>>>>")  # fmt: skip
    content = b"q 100 0 0 100 0 0 cm /Im Do Q"
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", page, image,
               b"<</Length %d>>\nstream\n%s\nendstream" % (len(content), content)]  # fmt: skip
    path = tmp_path / "real_width.pdf"
    path.write_bytes(classic_pdf(objects))
    manifest = run_report(store, path, PipelineSettings(tmp_path / "w"), "inbox", "2026-10")
    (child,) = manifest.children
    assert (child.state, child.quarantine_detail, child.width) == expected
    if child.state == "quarantined":
        assert child.quarantine_reason == "bad_dimensions"


def test_a_soft_masks_width_that_is_a_real_number_is_named_as_the_masks(tmp_path):
    """qpdf's issue-117.pdf: an /SMask of /Width 1.1 was "declared size -1x31"."""
    mask = (b"<</Type/XObject/Subtype/Image/Width 1.1/Height 4/ColorSpace/DeviceGray"
            b"/BitsPerComponent 8/Length 4>>\nstream\n\x00\x01\x02\x03\nendstream")  # fmt: skip
    objects = Objects()
    drawn = objects.add(image(40, b"/SMask %d 0 R" % objects.add(mask)))
    objects.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open("pdf", objects.pdf()) as doc:
        (ref,) = page_images(doc, 1)
        outcome = process_image(doc, ref, Limits()).outcome
    assert (outcome.reason, outcome.detail) == (
        "bad_dimensions", "its /SMask's /Width 1.1 is not an integer",
    )  # fmt: skip


def test_a_lost_document_catalog_is_damaged_cross_reference_data(tmp_path):
    path = tmp_path / "lost.pdf"
    path.write_bytes(classic_pdf([CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", PAGE], root=9))
    with pytest.raises(RefusedInput) as refused:
        inspect_pdf(path, Limits())
    assert refused.value.code == "damaged_xref"
    assert refused.value.message == (
        "PDF cross-reference data is damaged: the document catalog cannot be found"
    )


@pytest.mark.parametrize(
    ("catalog", "page", "code", "message"),
    [
        (b"<</Type/Catalog (x) 1/Pages 2 0 R>>", PAGE, "damaged_xref",
         "PDF cross-reference data is damaged: the document catalog cannot be read "
         "(invalid key in dict)"),
        (CATALOG, b"<</Type/Page (x) 1/Parent 2 0 R>>", "bad_page_tree",
         "PDF page tree is malformed: a page or page node cannot be read (invalid key in dict)"),
    ],
    ids=["catalog", "page"],
)  # fmt: skip
def test_a_catalog_or_page_mupdf_cannot_parse_is_refused_for_good(catalog, page, code, message,
                                                                  tmp_path):  # fmt: skip
    """qpdf's bad11.pdf, indirect-r-arg.pdf, issue-99.pdf, append-xref-loop.pdf: not
    `inspection_failed`, which the sensor reads again every full sweep."""
    path = tmp_path / "unparsed.pdf"
    path.write_bytes(classic_pdf([catalog, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", page]))
    with pytest.raises(RefusedInput) as refused:
        inspect_pdf(path, Limits())
    assert (refused.value.code, refused.value.message) == (code, message)


@pytest.mark.parametrize(
    ("cut", "state", "reason"),
    [(4, "archived", None), (0, "archived", None), (200, "quarantined", "truncated")],
    ids=["without_its_checksum", "whole", "cut_short"],
)
def test_a_flate_image_lacking_only_its_checksum_is_archived_one_cut_short_is_not(
    cut, state, reason, tmp_path, store
):
    """MuPDF says "premature end of data in flate filter" for both, and pads only the short
    one: an image whose samples are all there is archived as MuPDF draws it."""
    whole = zlib.compress(bytes(range(256)) * 36, 9)  # 96 x 32 RGB
    pixels = whole[: len(whole) - cut]
    image = (b"<</Type/XObject/Subtype/Image/Width 96/Height 32/ColorSpace/DeviceRGB"
             b"/BitsPerComponent 8/Filter/FlateDecode/Length %d>>\nstream\n%s\nendstream"
             % (len(pixels), pixels))  # fmt: skip
    page = (b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]/Contents 5 0 R"
            b"/Resources<</XObject<</Im 4 0 R>>>>>>")  # fmt: skip
    content = b"q 96 0 0 32 0 0 cm /Im Do Q"
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", page, image,
               b"<</Length %d>>\nstream\n%s\nendstream" % (len(content), content)]  # fmt: skip
    path = tmp_path / "flate.pdf"
    path.write_bytes(classic_pdf(objects))
    manifest = run_report(store, path, PipelineSettings(tmp_path / "w"), "inbox", "2026-10")
    (child,) = manifest.children
    assert (child.state, child.quarantine_reason) == (state, reason)


def test_an_unread_inline_image_is_truncated_only_when_the_content_cuts_it_off(tmp_path, store):
    """Two inline images MuPDF never reads: the first whole (an inline /CalRGB, a name MuPDF
    does not know), the second cut off by the end of the content. Poppler lists both; each is a
    record, `undecodable` saying its BI … EI is complete, and `truncated`."""
    whole = b"BI /W 2 /H 2 /CS /CalRGB /BPC 8 ID " + bytes(12) + b" EI "
    cut = b"BI /W 4 /H 4 /CS /G /BPC 8 ID \x01\x02\x03"
    content = b"q 9 0 0 9 0 0 cm " + whole + cut
    page = b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]/Contents 4 0 R/Resources<<>>>>"
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", page,
               b"<</Length %d>>\nstream\n%s\nendstream" % (len(content), content)]  # fmt: skip
    path = tmp_path / "inline.pdf"
    path.write_bytes(classic_pdf(objects))
    manifest = run_report(store, path, PipelineSettings(tmp_path / "w"), "inbox", "2026-10")
    found = [(c.origin, c.quarantine_reason, c.quarantine_detail) for c in manifest.children]
    assert [(origin, reason) for origin, reason, _ in found] == [
        ("inline", "undecodable"), ("inline", "truncated")]  # fmt: skip
    assert "BI … ID … EI is complete, which MuPDF did not read" in found[0][2]
    assert found[1][2].startswith("an inline image cut off by the end of its content stream")
    assert manifest.pages[0].state == "damaged"  # its content ends inside an inline image

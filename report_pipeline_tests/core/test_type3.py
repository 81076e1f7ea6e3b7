"""Type3 glyph procedures count as drawing paths only for the characters a page shows."""

import pymupdf
import pytest

from fixtures._type3 import IMAGES
from report_pipeline.core.pdf.pages import page_images
from report_pipeline_tests.conftest import fixture_pdf

TYPE3_PAGE = 5  # image_paths.pdf: font /T3, glyph "a" draws one image, glyph "b" another


@pytest.mark.parametrize(
    ("content", "drawn"),
    [
        (b"BT /T3 9 Tf (a) Tj ET", 1),
        (b"BT /T3 9 Tf [(ab) 5 (a)] TJ ET", 2),  # each glyph once per page
        (b"BT /T3 9 Tf (\\142) ' ET", 1),  # octal b, by the ' operator
        (b"q BT /T3 9 Tf ET Q BT (ab) Tj ET", 0),  # Q restores the font before /T3
        (b"BT /T3 9 Tf ET q Q BT (b) Tj ET", 1),  # a q/Q pair keeps it
        (b"BT /Helv 9 Tf (ab) Tj ET", 0),  # not a Type3 font
    ],
)
def test_a_glyph_procedure_is_a_path_only_when_its_character_is_shown(content, drawn):
    with pymupdf.open(fixture_pdf("image_paths.pdf")) as doc:
        page = doc[TYPE3_PAGE - 1]
        doc.update_stream(page.get_contents()[0], content)
        refs = page_images(doc, TYPE3_PAGE)
    assert [r.origin for r in refs] == ["type3/xobject"] * drawn


@pytest.mark.slow
def test_glyphs_of_direct_fonts_base_encodings_and_extgstate_fonts_are_found(run_fixture):
    """type3_cases.pdf (fixtures/_type3.py): two direct font dictionaries each showing `a`; a
    /BaseEncoding without /Differences; a font set by `gs`. Every glyph image is a record."""
    with pymupdf.open(fixture_pdf("type3_cases.pdf")) as doc:
        drawn = [len(page_images(doc, n)) for n in range(1, doc.page_count + 1)]
    assert tuple(drawn) == IMAGES
    manifest = run_fixture("type3_cases.pdf")
    assert manifest.state == "complete" and manifest.counts.archived == sum(IMAGES)


def test_a_glyph_shown_hidden_and_shown_again_is_one_hidden_and_one_shown_record(tmp_path):
    """Page 5 of image_paths.pdf, its glyph `a` shown inside a layer that is off, then outside."""
    with pymupdf.open(fixture_pdf("image_paths.pdf")) as doc:
        page = doc[TYPE3_PAGE - 1]
        off = doc.get_new_xref()
        doc.update_object(off, "<</Type /OCG /Name (Off)>>")
        doc.xref_set_key(doc.pdf_catalog(), "OCProperties",
                         f"<</OCGs [{off} 0 R] /D <</OFF [{off} 0 R]>>>>")  # fmt: skip
        resources = doc.xref_get_key(page.xref, "Resources")[1].split()[0]
        doc.xref_set_key(int(resources), "Properties", f"<</L {off} 0 R>>")
        content = b"/OC /L BDC BT /T3 9 Tf (a) Tj ET EMC BT /T3 9 Tf (aa) Tj ET"
        doc.update_stream(page.get_contents()[0], content)
        refs = page_images(doc, TYPE3_PAGE)
    assert [(r.origin, r.hidden) for r in refs] == [
        ("type3/xobject", "optional_content_off"), ("type3/xobject", "")
    ]  # fmt: skip


def test_a_type3_font_a_form_selects_stays_inside_the_form():
    """MuPDF runs a form in a saved graphics state: the font it selects is gone after it, so
    text the page shows next, with no font of its own, runs no glyph procedure."""
    with pymupdf.open(fixture_pdf("image_paths.pdf")) as doc:
        page = doc[TYPE3_PAGE - 1]
        form = doc.get_new_xref()
        doc.update_object(form, "<</Type/XObject/Subtype/Form/BBox[0 0 9 9]>>")
        doc.update_stream(form, b"BT /T3 9 Tf ET")  # the page's resources: it has none
        resources = doc.xref_get_key(page.xref, "Resources")[1].split()[0]
        doc.xref_set_key(int(resources), "XObject", f"<</F {form} 0 R>>")
        doc.update_stream(page.get_contents()[0], b"/F Do BT (a) Tj ET")
        assert page_images(doc, TYPE3_PAGE) == []

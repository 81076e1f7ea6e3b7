"""A name a form's, a pattern's or an annotation appearance's own resources lack is looked up in
the resources around them, down to the page's, as MuPDF's interpreter does
(`pdf_lookup_resource` on its resource stack); a Type3 glyph runs on a stack of its own. Found
in qpdf's test files `form-xobjects-some-resources*.pdf`, whose nested forms draw images that
only their caller's or the page's resources name. Each page's records are compared with
MuPDF's drawing device."""

import pymupdf

from fixtures._objects import Objects, form, image, stream, tiling
from fixtures._verify_draws import device_draws
from report_pipeline.core.pdf.pages import page_images

IMAGE = b"q 10 0 0 10 0 0 cm /%s Do Q"


def glyph_font(objects: Objects, proc: bytes) -> int:
    """A Type3 font whose glyph "a" runs `proc` with empty resources of its own."""
    glyph = objects.add(stream(b"", b"1 0 d0 " + proc))
    return objects.add(b"<</Type/Font/Subtype/Type3/FontBBox[0 0 1 1]/FontMatrix[1 0 0 1 0 0]"
                       b"/CharProcs<</a %d 0 R>>/Encoding<</Differences[97/a]>>/FirstChar 97"
                       b"/LastChar 97/Widths[1]/Resources<<>>>>" % glyph)  # fmt: skip


def fallback_pdf() -> tuple[bytes, dict[int, list[tuple[str, int]]]]:
    """Pages, and the (origin, object) each records."""
    objects, expected = Objects(), {}
    page_image, middle, inner = (objects.add(image(g)) for g in (10, 50, 90))
    # 1: a form in a form, neither naming what the inner one draws: the middle's and the page's
    fx2 = objects.add(form(b"<<>>", IMAGE % b"Mid" + IMAGE % b"Pg"))
    fx1 = objects.add(form(b"<</XObject<</Fx2 %d 0 R/Mid %d 0 R>>>>" % (fx2, middle), b"/Fx2 Do"))
    objects.page(b"<</XObject<</Fx1 %d 0 R/Pg %d 0 R>>>>" % (fx1, page_image), b"/Fx1 Do")
    expected[1] = [("form/form/xobject", middle), ("form/form/xobject", page_image)]
    # 2: a pattern whose cell's resources lack its image, and a pattern the form's lack
    cell = objects.add(tiling(b"<<>>", IMAGE % b"Pg"))
    fx = objects.add(form(b"<<>>", b"/Pattern cs /P scn 0 0 50 50 re f"))
    objects.page(b"<</XObject<</Fx %d 0 R/Pg %d 0 R>>/Pattern<</P %d 0 R>>>>"
                 % (fx, page_image, cell), b"/Fx Do")  # fmt: skip
    expected[2] = [("form/pattern/xobject", page_image)]
    # 3: an annotation's appearance with resources of its own that lack its image
    appearance = objects.add(form(b"<<>>", IMAGE % b"Pg"))
    annot = objects.add(b"<</Type/Annot/Subtype/Square/Rect[0 0 200 200]/AP<</N %d 0 R>>>>"
                        % appearance)  # fmt: skip
    objects.page(b"<</XObject<</Pg %d 0 R>>>>" % page_image, b"", b"/Annots[%d 0 R]" % annot)
    expected[3] = [("annotation/form/xobject", page_image)]
    # 4: the innermost resources that name it win
    fx = objects.add(form(b"<</XObject<</I %d 0 R>>>>" % inner, IMAGE % b"I"))
    objects.page(b"<</XObject<</Fx %d 0 R/I %d 0 R>>>>" % (fx, page_image), b"/Fx Do")
    expected[4] = [("form/xobject", inner)]
    # 5: a Type3 glyph with resources of its own finds nothing in the page's, image or form
    drawing = objects.add(form(b"<</XObject<</Pg %d 0 R>>>>" % page_image, IMAGE % b"Pg"))
    font = glyph_font(objects, IMAGE % b"Pg" + b" /Fx Do")
    objects.page(b"<</XObject<</Pg %d 0 R/Fx %d 0 R>>/Font<</T %d 0 R>>>>"
                 % (page_image, drawing, font), b"BT /T 9 Tf (a) Tj ET")  # fmt: skip
    expected[5] = []
    return objects.pdf(), expected


def test_a_name_missing_from_its_own_resources_is_found_around_them_as_mupdf_finds_it():
    data, expected = fallback_pdf()
    with pymupdf.open("pdf", data) as doc:
        for page, records in expected.items():
            refs = page_images(doc, page)
            assert [(r.origin, r.xref) for r in refs] == records, page
            assert device_draws(doc[page - 1]) == len(records), page

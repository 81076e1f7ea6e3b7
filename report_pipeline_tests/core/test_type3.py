"""Type3 glyph procedures count as drawing paths for each character a page shows, each time
MuPDF's renderer paints it (core/draws/type3.py), compared with MuPDF's drawing device."""

import time

import pymupdf
import pytest

from fixtures._objects import Objects, image, stream
from fixtures._type3 import IMAGES
from fixtures._type3_shows import TYPE3_SHOWS
from fixtures._verify_draws import device_draws
from report_pipeline.core.draws import drawn as walk
from report_pipeline.core.pdf.pages import page_images
from report_pipeline_tests.conftest import fixture_pdf

TYPE3_PAGE = 5  # image_paths.pdf: font /T3, glyph "a" draws one image, glyph "b" another


@pytest.mark.parametrize(
    ("content", "drawn"),
    [
        (b"BT /T3 9 Tf (a) Tj ET", 1),
        (b"BT /T3 9 Tf [(ab) 5 (a)] TJ ET", 3),  # each glyph each time it is shown
        (b"BT /T3 9 Tf (\\142) ' ET", 1),  # octal b, by the ' operator
        (b"q BT /T3 9 Tf ET Q BT (ab) Tj ET", 0),  # Q restores the font before /T3
        (b"BT /T3 9 Tf ET q Q BT (b) Tj ET", 1),  # a q/Q pair keeps it
        (b"BT /Helv 9 Tf (ab) Tj ET", 0),  # not a Type3 font
        (b"BT /T3 9 Tf (aab) Tj (a) Tj ET", 4),  # the second string is one byte, not "aab"
        (b"BT /T3 9 Tf [(a\\000a)] TJ ET", 2),  # a NUL byte does not end a string
        (b"BT /T3 9 Tf 3 Tr (ab) Tj 7 Tr (a) Tj ET", 0),  # invisible, clip only: not painted
        (b"BT /T3 9 Tf 2 Tr (a) Tj 4 Tr (a) Tj 6 Tr (b) Tj ET", 3),  # filled once, no clip
        (b"Q BT /T3 9 Tf (a) Tj ET", 1),  # one Q too many: the page's first state
    ],
)  # fmt: skip
def test_a_glyph_procedure_is_a_path_each_time_its_character_is_painted(content, drawn):
    with pymupdf.open(fixture_pdf("image_paths.pdf")) as doc:
        page = doc[TYPE3_PAGE - 1]
        doc.update_stream(page.get_contents()[0], content)
        refs = page_images(doc, TYPE3_PAGE)
        assert device_draws(page) == drawn
    assert [r.origin for r in refs] == ["type3/xobject"] * drawn


@pytest.mark.parametrize("page", sorted(TYPE3_SHOWS))
def test_a_pages_glyph_records_are_the_images_mupdf_paints(page):
    """type3_shows.pdf (fixtures/_type3_shows.py), one way of showing a glyph a page: many
    times, in sizes and colours, nested, by TJ, ' and ", in each text rendering mode, under a
    soft mask and a pattern, rendered directly, inside its own font, inside a pattern's cell."""
    with pymupdf.open(fixture_pdf("type3_shows.pdf")) as doc:
        refs = page_images(doc, page)
        drawn = device_draws(doc[page - 1])
    assert len(refs) == drawn == TYPE3_SHOWS[page][1]
    assert not any(ref.hidden for ref in refs)


@pytest.mark.slow
def test_the_report_archives_a_record_per_glyph_painted_and_is_complete(shared_run):
    _, manifest = shared_run("type3_shows.pdf")
    assert manifest.state == "complete"
    assert [p.expected for p in manifest.pages] == [n for _, n in TYPE3_SHOWS.values()]
    assert manifest.counts.archived == sum(n for _, n in TYPE3_SHOWS.values())


def glyphs_page(shown: bytes, glyphs: dict[bytes, bytes]) -> bytes:
    """One page showing `shown` (Flate compressed) in a Type3 font of `glyphs`, whose glyphs
    may draw image `/I`."""
    objects = Objects()
    drawn = objects.add(image(40))
    procs = b"".join(b"/%s %d 0 R" % (name, objects.add(stream(b"", proc)))
                     for name, proc in glyphs.items())  # fmt: skip
    differences = b" ".join(b"%d/%s" % (name[0], name) for name in glyphs)
    font = objects.add(b"<</Type/Font/Subtype/Type3/FontBBox[0 0 1 1]/FontMatrix[1 0 0 1 0 0]"
                       b"/CharProcs<<%s>>/Encoding<</Differences[%s]>>/FirstChar 97"
                       b"/LastChar 122/Widths[%s]/Resources<</XObject<</I %d 0 R>>>>>>"
                       % (procs, differences, b" ".join([b"1"] * 26), drawn))  # fmt: skip
    objects.page(b"<</Font<</T %d 0 R>>>>" % font, b"BT /T 1 Tf %s ET" % shown, flate=True)
    return objects.pdf()


GLYPHS = {b"a": b"1 0 d0 q 1 0 0 1 0 0 cm /I Do Q", b"b": b"1 0 0 0 1 1 d1 0 0 1 1 re f"}


def test_a_glyph_shown_thirty_thousand_times_runs_once(monkeypatch):
    """A glyph runs once for each state it is shown in and its later shows replay what it drew:
    25,000 shows of a glyph that draws nothing and 5,000 of one that draws an image are 5,000
    records, not 30,000 runs (the limit is 20,000); 20,000 shows of the second are more
    records than a page may hold, and the page is refused for that. (MuPDF's drawing device,
    the oracle, takes ~40 µs a show.)"""
    assert walk.MAX_INVOCATIONS < 30_000
    runs, real = [], walk.DrawFinder._run
    monkeypatch.setattr(walk.DrawFinder, "_run", lambda self, kind, *a: (
        runs.append(kind), real(self, kind, *a)))  # fmt: skip
    shown = b"(%s) Tj " % (b"b" * 1000) * 25 + b"[(%s)] TJ " % (b"a" * 500) * 10
    with pymupdf.open(stream=glyphs_page(shown, GLYPHS), filetype="pdf") as doc:
        started = time.process_time()
        draws, _ = walk.page_draws(doc, 1, 10_000)
        cpu = time.process_time() - started
        assert len(draws) == device_draws(doc[0]) == 5_000
    assert runs == ["type3", "type3"] and cpu < 3  # about 0.1 s
    many = glyphs_page(b"(%s) Tj" % (b"a" * 20_000), GLYPHS)
    with pymupdf.open(stream=many, filetype="pdf") as doc, pytest.raises(walk.TooManyDraws):
        walk.page_draws(doc, 1, 10_000)


@pytest.mark.slow
def test_glyphs_of_direct_fonts_base_encodings_and_extgstate_fonts_are_found(shared_run):
    """type3_cases.pdf (fixtures/_type3.py): two direct font dictionaries each showing `a`; a
    /BaseEncoding without /Differences; a font set by `gs`. Every glyph image is a record."""
    with pymupdf.open(fixture_pdf("type3_cases.pdf")) as doc:
        drawn = [len(page_images(doc, n)) for n in range(1, doc.page_count + 1)]
    assert tuple(drawn) == IMAGES
    _, manifest = shared_run("type3_cases.pdf")
    assert manifest.state == "complete" and manifest.counts.archived == sum(IMAGES)


def test_a_glyph_shown_hidden_and_shown_again_is_a_hidden_record_and_one_per_show(tmp_path):
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
        ("type3/xobject", "optional_content_off"), ("type3/xobject", ""), ("type3/xobject", "")
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


@pytest.mark.slow
def test_a_report_over_its_cap_in_glyphs_is_refused_saying_they_are_glyphs(monkeypatch, tmp_path):
    # Old TeX output sets its text in bitmap Type3 fonts: an image per character shown, so a
    # long document passes the report's cap, and the refusal says where its draws came from.
    from report_pipeline.core.model.settings import DecodeSettings
    from report_pipeline.core.plan import walk as planning

    monkeypatch.setattr(planning, "MAX_DRAWS_PER_REPORT", 300)  # the child is forked: it sees it
    path = tmp_path / "bitmap_text.pdf"
    path.write_bytes(glyphs_page(b"(%s) Tj" % (b"a" * 400), GLYPHS))
    with pytest.raises(planning.WalkFailed) as refused:
        planning.image_counts(path, 1, DecodeSettings())
    assert refused.value.reason == "too_many_images"
    assert refused.value.message.endswith(
        "the report draws more than 300 images, 400 of them in Type3 glyphs (text in a bitmap font)"
    )  # fmt: skip

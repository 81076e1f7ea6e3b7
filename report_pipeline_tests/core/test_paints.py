"""One record per draw (issue 30 item 3): a tiling pattern's image counts each time a paint uses
the pattern, as often as MuPDF runs its cell for the area painted (not at all for an area on a
cell boundary or under a pattern matrix that cannot be inverted; once per cell a small area
touches), never when `scn` only selects it, and a soft mask's image with each paint under the
mask. Compared page by page with MuPDF's drawing device on pattern_paints.pdf
(fixtures/_paints.py), whose counts poppler cannot give (it lists no pattern images, and a soft
mask's image once per `gs`)."""

from __future__ import annotations

import resource
import time

import pymupdf
import pytest

from fixtures._many_paints import MANY_PAINTS
from fixtures._paints import PAINT_PAGES
from fixtures._pattern_cells import pattern_cells
from fixtures._verify_draws import mupdf_draws
from report_pipeline.core.model.settings import DecodeSettings
from report_pipeline.core.pdf.pages import TooManyImages, page_images
from report_pipeline.core.plan import walk
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow

NAME = "pattern_paints.pdf"


@pytest.mark.parametrize("page", sorted(PAINT_PAGES))
def test_a_pages_records_are_the_images_mupdf_draws_at_each_paint(page):
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        refs = page_images(doc, page)
        drawn = mupdf_draws(doc[page - 1])
    assert len(refs) == drawn == PAINT_PAGES[page][1]
    assert not any(ref.hidden for ref in refs)


@pytest.mark.parametrize(
    ("content", "drawn"),
    [
        (b"/Pattern cs /P scn", 0),
        (b"/Pattern cs /P scn 0 0 10 10 re f 0 0 10 10 re f 0 0 10 10 re f", 3),
        (b"/Pattern cs /P scn 0 0 10 10 re W n", 0),  # a clip paints nothing
        (b"/Pattern cs /P scn 0 g 0 0 10 10 re f", 0),  # a colour replaces the pattern
        (b"/Pattern cs /P scn 0.5 sc 0 0 10 10 re f", 1),  # a colour value does not
        (b"/GS gs /GS gs 0 0 10 10 re f", 1),  # set twice, used once
        (b"/GS gs q 0 0 10 10 re f Q 0 0 10 10 re f", 2),
        (b"q /GS gs Q 0 0 10 10 re f", 0),  # Q restores the state without the mask
        (b"/GS gs BT /F 12 Tf (a) Tj 1 0 0 1 5 5 cm (b) Tj ET", 2),  # cm flushes the text
        (b"/GS gs BT /F 12 Tf 7 Tr (a) Tj ET", 0),  # a clip-only text paints nothing
        (b"/GS gs BT (a) Tj ET", 0),  # text with no font: MuPDF shows nothing
        (b"/GS gs Q 0 0 10 10 re f", 0),  # one Q too many: the page's first state, no mask
        (b"/GS gs q Q Q Q 0 0 10 10 re f", 0),  # and any more are ignored
    ],
)  # fmt: skip
def test_what_paints_and_what_only_changes_state(content, drawn, tmp_path):
    """Each content, written over page 1 of the fixture (its resources), against MuPDF."""
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        doc.update_stream(doc[0].get_contents()[0], content)
        doc.save(tmp_path / "page.pdf")
    with pymupdf.open(tmp_path / "page.pdf") as doc:
        assert len(page_images(doc, 1)) == mupdf_draws(doc[0]) == drawn


@pytest.mark.parametrize(
    ("content", "drawn"),
    [(b"0 0 0 0 re f", 0), (b"0 0 m 5 0 l f", 0), (b"10 0 m 10 5 l f", 0),  # on edges
     (b"5 5 0 0 re f", 1), (b"5 0 m 5 5 l f", 1),  # a zero-area path inside a cell, a line
     (b"0 0 m 50 0 l f", 1),  # on an edge, but over more than a step: a tile, run once
     (b"f", 1), (b"9 9 m f", 1),  # no segment: MuPDF paints it as a tile
     (b"q 0 0 0 0 0 0 cm 0 0 50 50 re f Q", 0),  # a singular ctm: the area is one point
     (b"q 1 0 0 1 0.5 0.5 cm 0 0 0 0 re f Q", 1),  # moved off the edge
     (b"0 0 0 0 re 0 w S", 4), (b"0 0 0 0 re W n", 0)],  # a stroke has a width; a clip paints
)  # fmt: skip
def test_a_paint_whose_cell_mupdf_does_not_run_is_no_record(content, drawn, tmp_path):
    """The pattern /P (10x10 cells from the origin) over page 1 of the fixture, against MuPDF:
    MuPDF runs the cell 0 times for an area that lies on a cell boundary, and 4 times for a
    stroke's box across four cells."""
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        doc.update_stream(doc[0].get_contents()[0], b"/Pattern cs /P scn /Pattern CS /P SCN "
                          + content)  # fmt: skip
        doc.save(tmp_path / "page.pdf")
    with pymupdf.open(tmp_path / "page.pdf") as doc:
        assert len(page_images(doc, 1)) == mupdf_draws(doc[0]) == drawn


def test_a_blending_pattern_runs_its_cell_per_cell_at_the_cost_of_its_records(tmp_path):
    """A pattern that uses blending (page 23's `/PB`) is never a tile: MuPDF runs its cell once
    per cell the area touches, however many. Over 10^10 cells, a cell that draws nothing costs
    one run and a replay, and one that draws an image stops at the page's cap, not after 10^10
    replays."""
    huge = b"/Pattern cs /PB scn 0 0 1000000 1000000 re f"
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        pattern = doc.xref_get_key(doc[22].xref, "Resources/Pattern/PB")[1].split()[0]
        wide = b"/Pattern cs /PB scn 0 0 30 1 re f"
        for content, name in ((huge, "image.pdf"), (wide, "wide.pdf")):
            doc.update_stream(doc[0].get_contents()[0], content)
            doc.save(tmp_path / name)
        doc.update_stream(int(pattern), b"0 0 1 1 re f")  # the same pattern, drawing no image
        doc.update_stream(doc[0].get_contents()[0], huge)
        doc.save(tmp_path / "empty.pdf")
    started = time.process_time()
    with pymupdf.open(tmp_path / "empty.pdf") as doc:
        assert page_images(doc, 1) == []
    with pymupdf.open(tmp_path / "wide.pdf") as doc:  # 3 cells wide, one high: 3, not a tile
        assert len(page_images(doc, 1)) == mupdf_draws(doc[0]) == 3
    with pymupdf.open(tmp_path / "image.pdf") as doc, pytest.raises(TooManyImages):
        page_images(doc, 1)
    assert time.process_time() - started < 10


@pytest.mark.parametrize("seed", range(3))
def test_a_paint_runs_the_cell_as_often_as_mupdf_runs_it_for_its_geometry(seed):
    """Random pages, each painting a pattern once (fixtures/_pattern_cells.py): a filled or
    stroked path, a stencil mask, after a random `cm`, on the page or in a form, the pattern's
    matrix (singular ones among them), box and steps at random. MuPDF runs the cell 0, 1, 2, 4
    times for one paint by the geometry (8 for a fill and a stroke); the walk's records are
    MuPDF's draws, page by page (a stencil mask: MuPDF's device has it as a clip)."""
    data, stencils = pattern_cells(seed, 150)
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        walked = [len(page_images(doc, n)) for n in range(1, doc.page_count + 1)]
        drawn = [mupdf_draws(page) + stencil for page, stencil in zip(doc, stencils, strict=True)]
    assert walked == drawn
    assert {0, 1, 2, 4} <= set(drawn)  # the geometry decides, in every way


def test_the_report_archives_one_record_per_paint_and_is_complete(shared_run):
    _, manifest = shared_run(NAME)
    assert manifest.state == "complete"
    assert manifest.counts.archived == sum(n for _, n in PAINT_PAGES.values())
    assert [p.expected for p in manifest.pages] == [n for _, n in PAINT_PAGES.values()]
    origins = {c.origin for c in manifest.children}
    assert {"pattern/xobject", "softmask/xobject", "form/softmask/xobject"} <= origins


MANY = "many_paints.pdf"
ORIGINS = {1: "pattern/xobject", 2: "softmask/xobject"}


@pytest.mark.parametrize("page", sorted(MANY_PAINTS))
def test_thousands_of_paints_are_a_record_per_image_drawn_and_cost_no_runs(page):
    """many_paints.pdf (fixtures/_many_paints.py): 30,000 paints a page, with a hatch, an image
    pattern and two soft masks; run at each paint they were 30,000 runs, past the limit of
    20,000. The image-free hatch and mask add nothing; each image-bearing paint one record."""
    with pymupdf.open(fixture_pdf(MANY)) as doc:
        started = time.process_time()
        refs = page_images(doc, page)
        cpu = time.process_time() - started
        drawn = mupdf_draws(doc[page - 1])
    assert len(refs) == drawn == MANY_PAINTS[page]
    assert {ref.origin for ref in refs} == {ORIGINS[page]}
    assert cpu < 3  # about 0.3 s


def test_a_report_of_thousands_of_paints_is_walked_in_its_child_and_archived(shared_run):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    walked = walk.image_counts(fixture_pdf(MANY), len(MANY_PAINTS), DecodeSettings())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert [images for images, _ in walked.counts] == list(MANY_PAINTS.values())
    assert cpu < 5  # the walk's child, both pages: about 0.5 s
    _, manifest = shared_run(MANY)  # run once for the session's tests that read it (the oracle)
    assert manifest.state == "complete"
    assert manifest.counts.archived == sum(MANY_PAINTS.values())
    assert manifest.counts.distinct_images == 2

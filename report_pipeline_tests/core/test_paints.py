"""One record per paint (issue 30 item 3): a tiling pattern's image counts each time a paint uses
the pattern, never when `scn` only selects it, and a soft mask's image with each paint under the
mask. Compared page by page with MuPDF's drawing device on pattern_paints.pdf
(fixtures/_paints.py), whose counts poppler cannot give (it lists no pattern images, and a soft
mask's image once per `gs`)."""

from __future__ import annotations

import pymupdf
import pytest

from fixtures._paints import PAINT_PAGES
from fixtures._verify_draws import mupdf_draws
from report_pipeline.core.worker.pdf_pages import page_images
from report_pipeline_tests.conftest import fixture_pdf

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
    ],
)  # fmt: skip
def test_what_paints_and_what_only_changes_state(content, drawn, tmp_path):
    """Each content, written over page 1 of the fixture (its resources), against MuPDF."""
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        doc.update_stream(doc[0].get_contents()[0], content)
        doc.save(tmp_path / "page.pdf")
    with pymupdf.open(tmp_path / "page.pdf") as doc:
        assert len(page_images(doc, 1)) == mupdf_draws(doc[0]) == drawn


def test_the_report_archives_one_record_per_paint_and_is_complete(run_fixture):
    manifest = run_fixture(NAME)
    assert manifest.state == "complete"
    assert manifest.counts.archived == sum(n for _, n in PAINT_PAGES.values())
    assert [p.expected for p in manifest.pages] == [n for _, n in PAINT_PAGES.values()]
    origins = {c.origin for c in manifest.children}
    assert {"pattern/xobject", "softmask/xobject", "form/softmask/xobject"} <= origins

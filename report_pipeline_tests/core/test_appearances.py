"""Which appearance of an annotation is drawn (issue 30 item 2, where the issue is silent: what
MuPDF's renderer shows): MuPDF's own appearance where it makes one (a form that asks for new
appearances, an unsigned signature field), no widget that is no form field, and an appearance
whatever its own /OC says. Compared page by page with MuPDF's drawing device on
annotation_appearances.pdf (fixtures/_appearances.py), and on the same file as stored."""

from __future__ import annotations

from collections import Counter

import pymupdf
import pytest

from fixtures._appearances import APPEARANCE_PAGES, annotation_appearances
from fixtures._verify_draws import mupdf_draws
from report_pipeline.core.draws import drawn
from report_pipeline.core.pdf.pages import page_images
from report_pipeline_tests.conftest import fixture_pdf

NAME = "annotation_appearances.pdf"


@pytest.mark.parametrize("page", sorted(APPEARANCE_PAGES))
def test_a_pages_records_are_the_appearance_mupdf_draws(page):
    shown, reasons, as_stored = APPEARANCE_PAGES[page]
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        refs = page_images(doc, page)
        assert sum(not ref.hidden for ref in refs) == mupdf_draws(doc[page - 1]) == shown
    assert Counter(ref.hidden for ref in refs if ref.hidden) == reasons
    assert all(ref.origin == "annotation/form/xobject" for ref in refs)
    # as stored (no new appearances asked for, every widget a field, no layer off), the same
    # annotations draw the images their stored appearances hold
    with pymupdf.open(stream=annotation_appearances(as_stored=True), filetype="pdf") as twin:
        refs = page_images(twin, page)
        assert mupdf_draws(twin[page - 1]) == len(refs) == as_stored
        assert not any(ref.hidden for ref in refs)


@pytest.mark.slow
def test_the_stored_appearances_mupdf_replaces_or_never_draws_are_no_records(shared_run):
    _, manifest = shared_run(NAME)
    assert manifest.state == "complete"
    counts = manifest.counts
    assert (counts.archived, counts.quarantined, counts.hidden) == (1, 0, 1)
    assert counts.accounted == counts.expected == 2
    assert [(c.page, c.state, c.hidden) for c in manifest.children] == [
        (9, "archived", ""), (10, "hidden", "optional_content_off")
    ]  # fmt: skip
    assert all(p.state == "complete" for p in manifest.pages)


def test_an_appearance_mupdf_made_that_cannot_draw_an_image_is_not_run(monkeypatch):
    """MuPDF makes an appearance for every field of a form that asks for new ones (300,000 in a
    hostile form): one without an operator that can draw an image is not run, a stored one is."""
    runs: list[str] = []
    real = drawn.DrawFinder.run

    def counted(self, kind, stream, *rest):
        runs.append(kind)
        return real(self, kind, stream, *rest)

    monkeypatch.setattr(drawn.DrawFinder, "run", counted)
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        for page in range(1, 6):  # MuPDF's own appearances, none of which draws an image
            assert page_images(doc, page) == []
    assert runs == []
    with pymupdf.open(stream=annotation_appearances(as_stored=True), filetype="pdf") as twin:
        assert len(page_images(twin, 1)) == 1  # the stored appearance, run
    assert runs == ["form"]

"""Graphics states nested past what MuPDF's renderer holds (deep_states.pdf,
fixtures/_deep_states.py): MuPDF raises "too many nested graphics states" at the `q` that would
go past 2,048 and draws nothing more of the page, its annotations neither. The walk keeps the
same count: the page is damaged (`stream_unreadable`) with the images drawn before; one more
image or annotation after the `q` is no record. They were all archived, the page complete."""

from __future__ import annotations

import pymupdf
import pytest

from fixtures._deep_states import DEEP_STATES
from fixtures._verify_draws import drawn_until_raised
from report_pipeline.core.pdf.pages import walk_page
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow  # runs the pipeline
NAME = "deep_states.pdf"


@pytest.mark.parametrize("page", sorted(DEEP_STATES))
def test_the_walk_draws_what_mupdf_draws_before_it_stops(page):
    pymupdf.TOOLS.mupdf_display_errors(False)
    drawn, records, state = DEEP_STATES[page]
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        refs, streams = walk_page(doc, page)
        by_mupdf, raised = drawn_until_raised(doc[page - 1])
    assert (len(refs), by_mupdf) == (records, drawn)
    assert bool(streams.broken) == bool(raised) == (state == "damaged")
    for found in streams.breaks:
        assert (found.reason, found.drawn) == ("stream_unreadable", drawn)
        assert "too many nested graphics states" in found.what


def test_the_report_is_complete_its_deep_pages_damaged(shared_run):
    _, manifest = shared_run(NAME)
    assert manifest.state == "complete"
    rows = {row.page: row for row in manifest.pages}
    assert {page: (row.state, row.expected) for page, row in rows.items()} == {
        page: (state, records) for page, (_, records, state) in DEEP_STATES.items()
    }  # fmt: skip
    assert [row.breaks[0].stream for row in rows.values() if row.breaks] == [
        "page content (object 8)", "form (object 10)", "softmask (object 13)",
    ]  # fmt: skip
    assert all(c.state == "archived" for c in manifest.children)

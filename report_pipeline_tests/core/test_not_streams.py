"""An XObject, pattern or soft-mask group that is a dictionary without a stream draws nothing, as
MuPDF's renderer draws it: no record, no broken stream, and never a refused report. The image
given as a direct dictionary once recorded object 0 and refused its whole report
(`inspection_failed`: "page 1 could not be read (ValueError)"). Compared page by page with
MuPDF's drawing device on not_streams.pdf (fixtures/_not_streams.py)."""

from __future__ import annotations

import pymupdf
import pytest

from fixtures._not_streams import NOT_STREAMS
from fixtures._verify_draws import mupdf_draws
from report_pipeline.core.pdf.pages import walk_page
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow  # runs the pipeline
NAME = "not_streams.pdf"


@pytest.mark.parametrize("page", sorted(NOT_STREAMS))
def test_what_is_not_a_stream_draws_nothing_and_breaks_nothing(page):
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        refs, streams = walk_page(doc, page)
        drawn = mupdf_draws(doc[page - 1])
    assert len(refs) == drawn == NOT_STREAMS[page][1]
    assert all(ref.xref > 0 for ref in refs)
    assert (streams.broken, streams.breaks) == (0, ())


def test_the_report_is_processed_complete_with_every_drawn_image_archived(shared_run):
    _, manifest = shared_run(NAME)
    assert manifest.state == "complete"
    assert [(p.state, p.expected) for p in manifest.pages] == [
        ("complete", n) for _, n in NOT_STREAMS.values()
    ]
    assert manifest.counts.archived == sum(n for _, n in NOT_STREAMS.values())

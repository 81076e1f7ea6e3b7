"""What MuPDF's renderer skips or passes through and goes on, as it draws it (skipped_parts.pdf,
fixtures/_skipped_parts.py): a /Contents part that is no stream (or a /Contents that is none)
damages no page, it was `stream_unreadable` or `page_unloadable`; a /Crypt filter in a
document that is not encrypted decodes as nothing, its image was `undecodable`; a sample depth
MuPDF cannot unpack is `unsupported_precision`, it was `undecodable` and an exception's name; a
filter array's entry that is no name is passed through, and ASCII85 data ends at its `~`, as
MuPDF reads them (both images were quarantined); an inline image whose `ID` runs into its data
damages no page (it was `stream_cut_off`)."""

from __future__ import annotations

import pymupdf
import pytest

from fixtures._skipped_parts import SKIPPED_PARTS, UNREAD
from fixtures._verify_draws import mupdf_draws
from report_pipeline.core.pdf.pages import filter_chain, walk_page
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow  # runs the pipeline
NAME = "skipped_parts.pdf"


@pytest.mark.parametrize("page", sorted(SKIPPED_PARTS))
def test_each_page_is_whole_and_draws_what_mupdf_draws(page):
    pymupdf.TOOLS.mupdf_display_errors(False)
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        refs, streams = walk_page(doc, page)
        drawn = mupdf_draws(doc[page - 1])
    assert drawn == SKIPPED_PARTS[page][0]
    assert len(refs) + UNREAD.get(page, 0) == len(SKIPPED_PARTS[page][1])
    assert (streams.broken, streams.breaks) == (0, ())


def test_a_crypt_filter_of_a_document_not_encrypted_is_no_filter():
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        chains = [filter_chain(doc, walk_page(doc, page)[0][0].xref)[0] for page in (4, 5)]
    assert chains == [("FlateDecode",), ()]


def test_an_entry_of_a_filter_array_that_is_no_name_is_passed_through():
    """`[null /FlateDecode]`: MuPDF says "unknown filter name ()" and decodes the rest."""
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        assert filter_chain(doc, walk_page(doc, 8)[0][0].xref)[0] == ("FlateDecode",)


def test_the_report_is_complete_with_a_record_for_each_image_asked_for(shared_run):
    _, manifest = shared_run(NAME)
    assert manifest.state == "complete"
    assert all(p.state == "complete" for p in manifest.pages)
    records = {page: [] for page in SKIPPED_PARTS}
    for child in manifest.children:
        records[child.page].append((child.state, child.quarantine_reason))
    assert records == {page: outcomes for page, (_, outcomes) in SKIPPED_PARTS.items()}
    depths = [c.quarantine_detail for c in manifest.children
              if c.quarantine_reason == "unsupported_precision"]  # fmt: skip
    assert depths == [
        f"/BitsPerComponent {bpc}: MuPDF decodes samples of 1, 2, 4, 8 or 16 bits only"
        for bpc in (3, 24)
    ]

"""Every spelling of an image's filter chain meets the same caps: indirect /Filter, arrays of
indirect names, indirect arrays, the inline-image abbreviations /F and /DP, and abbreviated
names (fixtures/_spellings.py). None of them lets an image past a cap or a header check."""

from __future__ import annotations

import pytest

from fixtures import _spellings as spellings
from report_pipeline.core.pdf.pages import filter_chain, open_pdf
from report_pipeline_tests.conftest import fixture_pdf

CASES = spellings.cases()
TYPES = {"JPXDecode": "jpx", "DCTDecode": "jpeg"}


@pytest.mark.slow
def test_each_spelling_is_quarantined_for_its_payloads_reason(shared_run):
    _, manifest = shared_run("filter_spellings.pdf")
    assert manifest.state == "complete" and manifest.counts.archived == 0
    outcomes = [(c.page, c.state, c.quarantine_reason, c.declared_type) for c in manifest.children]
    assert outcomes == [
        (page, "quarantined", spellings.PAYLOADS[payload][3],
         TYPES[spellings.PAYLOADS[payload][0]])
        for page, (_, payload) in enumerate(CASES, start=1)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("page", "case"), list(enumerate(CASES)), ids=[f"{s}-{p}" for s, p in CASES]
)
def test_the_chain_is_read_from_the_resolved_object(page, case):
    doc = open_pdf(fixture_pdf("filter_spellings.pdf"))
    (xref, *_) = doc[page].get_images(full=True)[0]
    filters, parms = filter_chain(doc, xref)
    assert filters == (spellings.PAYLOADS[case[1]][0],) and parms == ("",)

"""Classes from the eleventh crafted round (issue 30), each against MuPDF's drawing device:
`BI … EI` inside a comment or a string is no inline image."""

from __future__ import annotations

import pymupdf
import pytest

from fixtures._objects import Objects, image
from fixtures._verify_draws import device_draws
from report_pipeline.core.draws.operators import inline_images
from report_pipeline.core.pdf.pages import walk_page
from report_pipeline.core.plan import walk


@pytest.mark.parametrize(
    ("content", "begun"),
    [
        (b"% /Im Do BI /W 1 ID x EI\nq Q", 0),
        (b"BT (a BI /W 1 ID x EI ) Tj ET", 0),
        (b"BT (a (nested BI /W 1 ID x EI) b) Tj ET", 0),
        (b"q BI /W 1 /H 1 /BPC 8 /CS /G ID x EI Q % BI\nBI /W 1 ID", 2),
    ],
)  # fmt: skip
def test_only_bi_operators_begin_inline_images(content, begun):
    assert inline_images(content) == begun


def test_an_inline_image_in_a_comment_or_a_string_is_no_record():
    """The letters `BI … EI` in a comment or a string are no inline image for MuPDF: the page
    drew one image and was one archived record plus one quarantined (`undecodable`, "MuPDF did
    not read it") for the comment, and one for the string."""
    o = Objects()
    drawn = o.add(image(40))
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn,
           b"% BI /W 1 /H 1 /BPC 8 /CS /G ID x EI\nBT (BI /W 1 ID x EI ) Tj ET "
           b"q 10 0 0 10 0 0 cm /Im Do Q")  # fmt: skip
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        refs, _ = walk_page(doc, 1)
        assert len(refs) == device_draws(doc[0]) == 1
        assert walk._unread_inline_images(doc, 1, refs) == (0, 0)

"""Whether a content stream's operators parse to its end (core/draws/operators.py): plain bytes
in, where it was cut off out. `short`: the stream's filter said its data ended early."""

from __future__ import annotations

import time

import pytest

from report_pipeline.core.draws.operators import cut_off

DRAW = b"q 9 0 0 9 0 0 cm /A Do Q\n"


@pytest.mark.parametrize(
    ("tail", "whole", "short"),
    [
        (b"", "", ""),
        (b"% a comment at the end", "", ""),
        (b"BT (a(b)c) Tj ET", "", ""),
        (b"(a\\)b) Tj", "", ""),
        (b"BI /W 2 /H 1 /CS /G /BPC 8 ID \x01\x02\nEI Q", "", ""),
        (b"BI /W 2 /H 1 /F /Fl /DP <</Predictor 15>> ID \x00EI\xff\nEI\n", "", ""),
        (b") ) /A Do", "", ""),  # stray bytes MuPDF skips: the operators go on
        (b"0 0 1", "", "after operands with no operator: 0 0 1"),
        (b"/P <</MCID 1", "", "after operands with no operator: /P <</MCID 1"),
        (b"BT (a(b)c)", "", "after operands with no operator: (a(b)c)"),
        (b"0 0 1 1 r", "", "inside the operator r"),
        (b"BT (Hello", "inside a string", "inside a string"),
        (b"BT (a(b)c Tj ET", "inside a string", "inside a string"),
        (b"(a\\)b Tj", "inside a string", "inside a string"),
        (b"BT <414", "inside a hex string", "inside a hex string"),
        (b"BI /W 4 /H", "inside an inline image", "inside an inline image"),
        (b"BI /W 4 /H 4 /CS /G /BPC 8 ID \x01\x02\x03", "inside an inline image",
         "inside an inline image"),
    ],
)  # fmt: skip
def test_where_a_stream_is_cut_off_and_what_complete_data_may_end_with(tail, whole, short):
    assert cut_off(DRAW + tail) == whole
    assert cut_off(DRAW + tail, short=True) == short


def test_tokens_split_across_a_contents_array_parse_once_joined():
    """qpdf's split-tokens.pdf, as MuPDF joins its streams: a string, an array's names and an
    inline image's data split between streams; it ends with a stray name (data complete)."""
    parts = [
        b"BT /F1 24 Tf 72 720 Td (Pot",
        b"ato) Tj\nET [ /array",
        b"/split ] BI /CS /G/W 66/H 47/BPC 8/F/Fl ID x\x9c\x01",
        b"\x02\x03\nEI\n/Z#00Z",
    ]
    joined = b" ".join(parts)
    assert cut_off(joined) == ""
    assert cut_off(joined, short=True) == "after operands with no operator: /Z#00Z"
    assert cut_off(parts[0]) == "inside a string"  # one part alone is cut off


def test_a_large_stream_is_judged_in_linear_time():
    """A 4 MB stream with a nested string on every line: judged in one pass. The bound is about
    behaviour (a quadratic parser takes minutes here), in CPU time, so a busy machine passes."""
    page = DRAW + b"0.5 0.2 0.1 rg 10 10 m 20 20 l 30 30 40 40 50 50 c h f BT (a (b) c) Tj ET\n"
    content = page * 40_000
    started = time.process_time()
    assert cut_off(content, short=True) == ""
    assert time.process_time() - started < 10.0


def test_an_inline_image_whose_id_runs_into_its_data_is_skipped_as_mupdf_skips_it():
    """`ID\\x01…` is no `ID` to MuPDF's lexer: its inline dictionary ends in a syntax error
    ("invalid key in dict") and MuPDF reads on after that token, so nothing is cut off."""
    unspaced = b"q BI /W 2 /H 2 /CS /G /BPC 8 ID\x01\x02\x03\x04 EI Q "
    assert cut_off(unspaced + b"q 9 0 0 9 0 0 cm /A Do Q") == ""
    assert cut_off(unspaced.rstrip(b" EIQ")) == ""
    assert cut_off(b"q BI /W 2 /H 2 /CS /G /BPC 8 ID") == "inside an inline image"
    assert cut_off(b"q BI /W 2 /H 2 ID \x01\x02") == "inside an inline image"
    assert cut_off(b"q BI /W 2 /H 2 /CS /G /BPC 8 ID/\x02\x03\x04 EI Q") == ""  # data from `/`
    assert cut_off(b"q BI /W 2 /H 2 /CS /G /BPC 8 ID(\x02") == "inside an inline image"


def test_an_inline_dictionary_may_hold_a_reference_as_mupdf_parses_it():
    """`BI … /SMask 3 0 R ID`: MuPDF reads the reference (and ignores it: "Ignoring invalid
    inline image soft mask"), then the image's data, whatever it holds, to its `EI` (crafted
    round 9: the data's `(` was taken for a string that never closes)."""
    image = b"q BI /W 2 /H 2 /CS /G /BPC 8 /SMask 3 0 R ID \x01(\x03\x04 EI Q "
    assert cut_off(image + b"q 9 0 0 9 0 0 cm /A Do Q") == ""
    assert cut_off(b"q BI /W 2 /H 2 /SMask 3 0 R ID \x01(") == "inside an inline image"

"""Text filled or stroked with a tiling pattern counts the cells MuPDF's renderer runs for it
(issue 30 leftovers): MuPDF bounds the text it paints by its glyphs' boxes (each grown by one
unit, in text space), in device space, grown for a stroke by the line width (pdf-op-run.c,
`pdf_flush_text`), and runs the pattern's cell over that box as over a path's
(`core/draws/textbox.py`, `tiles.cells`): 1, 2 or 4 times for text across cell boundaries, once
as a tile for text over more than a step. The walk counted such text once. Every expected
count here is MuPDF's drawing device's (`fixtures/_verify_draws.py`)."""

from __future__ import annotations

import random
import time

import pymupdf
import pytest

from fixtures._objects import Objects, image, stream, tiling_pattern
from fixtures._verify_draws import device_draws, mupdf_draws
from report_pipeline.core.pdf.pages import page_images

FILL, STROKE = b"/Pattern cs /P scn ", b"/Pattern CS /P SCN "


def text_page(content: bytes, form: bytes = b"q 0 0 1 rg Q") -> bytes:
    """One 200x200 page running `content` with: /P, a 10x10 tiling pattern whose cell draws an
    image, /PW the same with steps of 1000; /F Helvetica, /T a Type3 font whose glyph `c`
    (10x10 units of 0.1) fills a square and draws nothing; /Fm a form scaled 2x and moved by
    (3, 3) by its /Matrix, running `form`."""
    o = Objects()
    drawn = o.add(image(40))
    pattern = o.add(tiling_pattern(drawn))
    wide = o.add(stream(b"/PatternType 1/PaintType 1/TilingType 1/BBox[0 0 10 10]/XStep 1000"
                        b"/YStep 1000/Resources<</XObject<</T %d 0 R>>>>" % drawn,
                        b"q 10 0 0 10 0 0 cm /T Do Q"))  # fmt: skip
    font = o.add(b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>")
    glyph = o.add(stream(b"", b"10 0 0 0 10 10 d1 0 0 10 10 re f"))
    type3 = o.add(b"<</Type/Font/Subtype/Type3/FontBBox[0 0 10 10]/FontMatrix[0.1 0 0 0.1 0 0]"
                  b"/CharProcs<</c %d 0 R>>/Encoding<</Type/Encoding/Differences[99/c]>>"
                  b"/FirstChar 99/LastChar 99/Widths[10]/Resources<<>>>>" % glyph)  # fmt: skip
    resources = b"<</Pattern<</P %d 0 R/PW %d 0 R>>/Font<</F %d 0 R/T %d 0 R>>" % (
        pattern, wide, font, type3)  # fmt: skip
    fm = o.add(stream(b"/Type/XObject/Subtype/Form/BBox[0 0 100 100]/Matrix[2 0 0 2 3 3]"
                      b"/Resources" + resources + b">>", form))  # fmt: skip
    o.page(resources + b"/XObject<</Fm %d 0 R>>>>" % fm, content)
    return o.pdf()


# each case that turns on a part of the text state with its twin without it (`0 ...`): the box
# MuPDF bounds differs, and so does the count
CASES = {
    "one cell": (FILL + b"BT /F 4 Tf 3 3 Td (a) Tj ET", 1),
    "across x": (FILL + b"BT /F 4 Tf 7 3 Td (a) Tj ET", 2),
    "across x and y": (FILL + b"BT /F 4 Tf 7 7 Td (a) Tj ET", 4),
    "over a step: a tile": (FILL + b"BT /F 40 Tf 7 7 Td (a) Tj ET", 1),
    "many strings, one text": (FILL + b"BT /F 4 Tf 2 2 Td (a) Tj 1 0 Td (a) Tj ET", 1),
    "the second string crosses": (FILL + b"BT /F 4 Tf 2 2 Td (a) Tj 5 0 Td (a) Tj ET", 2),
    "Tz 50": (FILL + b"BT /F 4 Tf 50 Tz 5.5 2 Td (ab) Tj ET", 1),
    "0 Tz 50": (FILL + b"BT /F 4 Tf 5.5 2 Td (ab) Tj ET", 2),
    "Tc": (FILL + b"BT /F 4 Tf 2 Tc 3.5 2 Td (aa) Tj ET", 2),
    "0 Tc": (FILL + b"BT /F 4 Tf 3.5 2 Td (aa) Tj ET", 1),
    "Tw": (FILL + b"BT /F 4 Tf 3 Tw 3.5 2 Td ( a) Tj ET", 2),
    "0 Tw": (FILL + b"BT /F 4 Tf 3.5 2 Td ( a) Tj ET", 1),
    "TJ": (FILL + b"BT /F 4 Tf 5 2 Td [(a) -1000 (a)] TJ ET", 1),
    "0 TJ": (FILL + b"BT /F 4 Tf 5 2 Td [(a) 0 (a)] TJ ET", 2),
    "Ts": (FILL + b"BT /F 4 Tf 6 Ts 2 2 Td (a) Tj ET", 2),
    "0 Ts": (FILL + b"BT /F 4 Tf 2 2 Td (a) Tj ET", 1),
    "TL T*": (FILL + b"BT /F 4 Tf 3 TL 1 14 Td T* (a) Tj ET", 2),
    "0 TL T*": (FILL + b"BT /F 4 Tf 0 TL 1 14 Td T* (a) Tj ET", 1),
    "quote": (FILL + b"BT /F 4 Tf 3 TL 1 14 Td (a) ' ET", 2),
    "0 quote": (FILL + b"BT /F 4 Tf 0 TL 1 14 Td (a) ' ET", 1),
    "double quote": (FILL + b'BT /F 4 Tf 3.5 2 Td 0 2 (aa) " ET', 2),
    "0 double quote": (FILL + b'BT /F 4 Tf 3.5 2 Td 0 0 (aa) " ET', 1),
    "Tm": (FILL + b"BT /F 1 Tf 4 0 0 4 7 3 Tm (a) Tj ET", 2),
    "rotated": (FILL + b"BT /F 4 Tf 0 1 -1 0 1.5 2 Tm (a) Tj ET", 2),
    "0 rotated": (FILL + b"BT /F 4 Tf 1 0 0 1 1.5 2 Tm (a) Tj ET", 1),
    "rotated by cm": (FILL + b"q 0.7071 0.7071 -0.7071 0.7071 5 1 cm BT /F 4 Tf (a) Tj ET Q", 2),
    "a Type3 glyph": (FILL + b"BT /T 4 Tf 2 2 Td (c) Tj ET", 1),
    "a Type3 glyph across": (FILL + b"BT /T 4 Tf 7 2 Td (c) Tj ET", 2),
    "stroked": (STROKE + b"1 Tr 0.1 w 2 j BT /F 4 Tf 7 3 Td (a) Tj ET", 2),
    "stroked, miter joins": (STROKE + b"1 Tr 0.1 w BT /F 4 Tf 7 3 Td (a) Tj ET", 2),
    "stroked wide": (STROKE + b"1 Tr 1 w BT /F 4 Tf 7 3 Td (a) Tj ET", 1),
    "filled and stroked": (FILL + STROKE + b"2 Tr 0.1 w 2 j BT /F 4 Tf 7 3 Td (a) Tj ET", 4),
    "clip only": (FILL + b"7 Tr BT /F 4 Tf 7 3 Td (a) Tj ET", 0),
    "invisible": (FILL + b"3 Tr BT /F 4 Tf 7 3 Td (a) Tj ET", 0),
    "a step larger than the text": (b"/Pattern cs /PW scn BT /F 40 Tf 7 7 Td (a) Tj ET", 1),
    "a larger step, across": (b"/Pattern cs /PW scn BT /F 40 Tf -15 -15 Td (a) Tj ET", 4),
    "flushed by a change of mode": (FILL + b"BT /F 4 Tf 7 3 Td (a) Tj 3 Tr (a) Tj ET", 2),
    "shown before, on its line": (b"BT /F 4 Tf 3 2 Td (aa) Tj %s(a) Tj ET" % FILL, 2),
    "0 shown before, on its line": (b"BT /F 4 Tf 3 2 Td (a) Tj %s(a) Tj ET" % FILL, 1),
    "shown before, a new line": (b"BT /F 4 Tf 3 2 Td (aa) Tj %s0 0 Td (a) Tj ET" % FILL, 1),
    "q/Q keep the text state": (FILL + b"BT /F 4 Tf q 50 Tz Q 5.5 2 Td (ab) Tj ET", 2),
}
FORM_CASES = {  # text in /Fm, scaled 2x and moved by (3, 3)
    "form: one cell": (FILL + b"BT /F 1 Tf 1.5 1.5 Td (a) Tj ET", 1),
    "form: across": (FILL + b"BT /F 1 Tf 1 1 Td (a) Tj ET", 2),
    "form: across both": (FILL + b"BT /F 1 Tf 0 0 Td (a) Tj ET", 4),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_text_painted_with_a_pattern_counts_the_cells_mupdf_runs(case):
    content, drawn = CASES[case]
    with pymupdf.open(stream=text_page(content), filetype="pdf") as doc:
        assert (len(page_images(doc, 1)), device_draws(doc[0])) == (drawn, drawn)


@pytest.mark.parametrize("case", sorted(FORM_CASES))
def test_text_in_a_form_with_a_matrix_counts_the_cells_mupdf_runs(case):
    content, drawn = FORM_CASES[case]
    with pymupdf.open(stream=text_page(b"/Fm Do", content), filetype="pdf") as doc:
        assert (len(page_images(doc, 1)), mupdf_draws(doc[0])) == (drawn, drawn)


def cid_page(content: bytes, encoding: bytes) -> bytes:
    """One page running `content` with /P and /F, a two-byte font (Type0, `encoding`
    Identity-H or -V) whose CIDFont is not embedded (MuPDF draws it with a substitute)."""
    o = Objects()
    pattern = o.add(tiling_pattern(o.add(image(40))))
    cid = o.add(b"<</Type/Font/Subtype/CIDFontType2/BaseFont/Arial/CIDSystemInfo<</Registry"
                b"(Adobe)/Ordering(Identity)/Supplement 0>>/FontDescriptor<</Type/FontDescriptor"
                b"/FontName/Arial/Flags 32/FontBBox[0 -200 1000 900]/ItalicAngle 0/Ascent 900"
                b"/Descent -200/CapHeight 700/StemV 80>>/DW 1000>>")  # fmt: skip
    font = o.add(b"<</Type/Font/Subtype/Type0/BaseFont/Arial/Encoding%s/DescendantFonts[%d 0 R]>>"
                 % (encoding, cid))  # fmt: skip
    o.page(b"<</Pattern<</P %d 0 R>>/Font<</F %d 0 R>>>>" % (pattern, font), content)
    return o.pdf()


@pytest.mark.parametrize("encoding", [b"/Identity-H", b"/Identity-V"])
def test_two_byte_text_counts_the_cells_mupdf_runs(encoding):
    """A two-byte font, horizontal or vertical, shown by TJ (whose strings the walk reads
    whole), at ten places: the walk's records are MuPDF's draws (1, 2 and 4 among them)."""
    counts = []
    for x in range(10):
        content = FILL + b"BT /F 3 Tf %d 3 Td [<00410042> 200 <0043>] TJ ET" % x
        with pymupdf.open(stream=cid_page(content, encoding), filetype="pdf") as doc:
            walked, drawn = len(page_images(doc, 1)), device_draws(doc[0])
        assert walked == drawn, (x, walked, drawn)
        counts.append(drawn)
    assert len(set(counts)) > 1


def _random_page(rng: random.Random) -> bytes:
    font = rng.choice([b"/F", b"/T"])
    text = bytes(rng.choice(b"ac ") if font == b"/F" else 99 for _ in range(rng.randint(1, 3)))
    state = b" ".join(rng.sample([b"%d Tz" % rng.choice([50, 100, 150]),
                                  b"%.1f Tc" % rng.uniform(-1, 2), b"%.1f Tw" % rng.uniform(0, 3),
                                  b"%.1f Ts" % rng.uniform(-2, 2)], rng.randint(0, 4)))  # fmt: skip
    a, b = rng.choice([(1, 0), (0, 1), (0.8, 0.6), (-1, 0)])
    matrix = b"%.2f %.2f %.2f %.2f %.2f %.2f Tm" % (a, b, -b, a, rng.uniform(0, 30),
                                                     rng.uniform(0, 30))  # fmt: skip
    show = rng.choice([b"(%s) Tj" % text, b"[(%s) %d (a)] TJ" % (text, rng.randint(-900, 900))])
    mode = rng.choice([b"0 Tr", b"0 Tr", b"1 Tr 0.2 w 1 j", b"2 Tr 0.2 w 2 j"])
    return (FILL + STROKE + b"%s BT %s %.1f Tf %s %s %s ET"
            % (mode, font, rng.uniform(1, 9), state, matrix, show))  # fmt: skip


@pytest.mark.parametrize("seed", range(2))
def test_random_text_counts_the_cells_mupdf_runs(seed):
    """Random text, size, spacing, scale, rise, matrix, mode, Helvetica or a Type3 font, each
    painted with /P (10x10 cells) over one page: the walk's records are MuPDF's draws."""
    rng = random.Random(seed)
    counts = []
    for _ in range(60):
        content = _random_page(rng)
        with pymupdf.open(stream=text_page(content), filetype="pdf") as doc:
            walked, drawn = len(page_images(doc, 1)), device_draws(doc[0])
        assert walked == drawn, content
        counts.append(drawn)
    assert {1, 2, 4} <= set(counts)


def test_a_page_of_100000_glyphs_stays_within_the_walks_limits():
    """100,000 glyphs painted with a pattern, in 2,000 text objects: laid out one by one in
    well under the walk's CPU budget (60 s), and counted as MuPDF runs the cells."""
    line = b"BT /F 1 Tf %d %d Td (" + b"a" * 50 + b") Tj ET\n"
    content = FILL + b"".join(line % (k % 7, 20 + k % 150) for k in range(2_000))
    with pymupdf.open(stream=text_page(content), filetype="pdf") as doc:
        started = time.process_time()
        walked = len(page_images(doc, 1))
        spent = time.process_time() - started
        assert walked == mupdf_draws(doc[0])
    assert spent < 10


def test_past_the_glyph_cap_text_counts_once(monkeypatch):
    """Past MAX_GLYPHS glyphs on a page, the box of its text is not followed: the text counts
    once, as it did before."""
    monkeypatch.setattr("report_pipeline.core.draws.textbox.MAX_GLYPHS", 0)
    with pymupdf.open(stream=text_page(CASES["across x and y"][0]), filetype="pdf") as doc:
        assert len(page_images(doc, 1)) == 1


@pytest.mark.parametrize("where", ["form", "form in a form", "annotation", "soft mask"])
def test_a_pattern_only_a_form_or_an_appearance_holds_is_followed_too(where):
    """The walk lays text out on a page whose own resources hold no pattern, when a form, a
    form inside it, an annotation's appearance or a soft mask's group does
    (`textbox.paints_patterns`): text across a cell boundary there counts MuPDF's 2 runs."""
    o = Objects()
    pattern = o.add(tiling_pattern(o.add(image(40))))
    font = o.add(b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>")
    resources = b"<</Pattern<</P %d 0 R>>/Font<</F %d 0 R>>>>" % (pattern, font)
    text = FILL + b"BT /F 4 Tf 7 3 Td (a) Tj ET"
    form = o.add(stream(b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]/Resources" + resources,
                        text))  # fmt: skip
    if where == "form in a form":
        form = o.add(stream(b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]"
                            b"/Resources<</XObject<</In %d 0 R>>>>" % form, b"/In Do"))  # fmt: skip
    if where == "annotation":
        annot = o.add(b"<</Type/Annot/Subtype/Square/Rect[0 0 200 200]/F 4/AP<</N %d 0 R>>>>"
                      % form)  # fmt: skip
        o.page(b"<<>>", b"", b"/Annots[%d 0 R]" % annot)
    elif where == "soft mask":
        head = b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]/Group<</S/Transparency>>"
        group = o.add(stream(head + b"/Resources" + resources, text))
        gs = b"<</SMask<</Type/Mask/S/Luminosity/G %d 0 R>>>>" % group
        o.page(b"<</ExtGState<</GS %s>>>>" % gs, b"/GS gs 0 0 50 50 re f")
    else:
        o.page(b"<</XObject<</Fm %d 0 R>>>>" % form, b"/Fm Do")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        assert (len(page_images(doc, 1)), mupdf_draws(doc[0])) == (2, 2)


@pytest.mark.parametrize(
    ("content", "drawn"),
    [(b"/GS gs 50 Tz 0 0 50 50 re f", 1), (b"/GS gs 0 0 50 50 re f", 2),
     (b"/GS gs 50 Tz 0 0 50 50 re f 100 Tz 0 0 50 50 re f", 3),
     (b"/GS gs 0 0 50 50 re f 50 Tz 0 0 50 50 re f", 3)],
)  # fmt: skip
def test_a_soft_masks_text_is_laid_out_in_the_text_state_it_is_painted_in(content, drawn):
    """A soft mask's group whose text (`ab` at x 5.5) is filled with a pattern runs in the text
    state of the paint under it: at Tz 50 the text stays in one cell, at 100 it crosses into a
    second. The group painted again under another Tz is run again, not replayed."""
    o = Objects()
    pattern = o.add(tiling_pattern(o.add(image(40))))
    font = o.add(b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>")
    resources = b"<</Pattern<</P %d 0 R>>/Font<</F %d 0 R>>>>" % (pattern, font)
    head = b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]/Group<</S/Transparency>>/Resources"
    group = o.add(stream(head + resources, FILL + b"BT /F 4 Tf 5.5 2 Td (ab) Tj ET"))
    o.page(b"<</ExtGState<</GS<</SMask<</Type/Mask/S/Luminosity/G %d 0 R>>>>>>>>" % group,
           content)  # fmt: skip
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        assert (len(page_images(doc, 1)), mupdf_draws(doc[0])) == (drawn, drawn)

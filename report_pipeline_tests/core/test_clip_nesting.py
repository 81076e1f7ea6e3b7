"""Clips nested past what MuPDF's renderer holds, and clip text whose transformation changes
(core/draws/clips.py): MuPDF raises "layer/clip nesting too deep" at the 1,025th clip, and "CTM
CHANGE IN CLIP TEXT" at a `cm` after text shown in a clip mode and before its `ET`, and draws
nothing more of the page, its annotations neither. The walk keeps the same count: the page is
damaged (`stream_unreadable`) with the images drawn before. They were all records, the page
complete (crafted round 6). The PDFs are built here, each page one case, and every page is
compared with MuPDF's drawing device."""

from __future__ import annotations

import zlib

import pymupdf
import pytest

from fixtures._verify_draws import drawn_until_raised
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pdf.pages import walk_page
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.slow  # runs the pipeline

CL = "0 0 600 600 re W n\n"
IMG = "q 40 0 0 40 10 10 cm /Im Do Q\n"
PF = "/Pattern cs /P scn 0 0 300 300 re f\n"


def T(body: str) -> str:
    return f"BT /F 12 Tf {body} ET\n"


# page content, the form's content (before its image), the pattern cell's (before its image),
# the annotation's appearance (None: no annotation); and what MuPDF does: images, raises
CASES = {
    "1024 clips": (CL * 1024 + IMG, "", "", None, 1, ""),
    "1025 clips": (CL * 1025 + IMG, "", "", None, 0, "nesting"),
    "an image, 1025 clips, an image": (IMG + CL * 1025 + IMG, "", "", None, 1, "nesting"),
    "q clip Q, 1,100 times": (("q " + CL + "Q\n") * 1100 + IMG, "", "", None, 1, ""),
    "1,100 clips inside q, then Q": ("q " + CL * 1100 + "Q " + IMG, "", "", None, 0, "nesting"),
    "bare W n": ("W n\n" * 1100 + IMG, "", "", None, 0, "nesting"),
    "W then a filled path": (
        "0 0 9 9 re W 0 0 1 1 re f\n" * 1100 + IMG,
        "",
        "",
        None,
        0,
        "nesting",
    ),
    "W* S": ("0 0 9 9 re W* S\n" * 1100 + IMG, "", "", None, 0, "nesting"),
    "1023 clips, a form": (CL * 1023 + "/Fm Do\n", "", "", None, 1, ""),
    "1024 clips, a form": (CL * 1024 + "/Fm Do\n", "", "", None, 0, "nesting"),
    "1020 clips, a form with 4": (CL * 1020 + "/Fm Do\n", CL * 4, "", None, 0, "nesting"),
    "1020 clips, a form with 3": (CL * 1020 + "/Fm Do\n", CL * 3, "", None, 1, ""),
    "a form 2,000 times": (CL * 1000 + "/Fm Do\n" * 2000, CL * 10, "", None, 2000, ""),
    "1020 clips, a cell with 4": (CL * 1020 + PF, "", CL * 4, None, 1, ""),
    "1020 clips, a cell with 5": (CL * 1020 + PF, "", CL * 5, None, 0, "nesting"),
    "a cell with 5 after 1020, painted twice": (
        CL * 1000 + PF + CL * 20 + PF,
        "",
        CL * 5,
        None,
        1,
        "nesting",
    ),  # fmt: skip
    "1023 clips, a soft mask": (CL * 1023 + "/G gs " + IMG, "", "", None, 2, ""),
    "1024 clips, a soft mask": (CL * 1024 + "/G gs " + IMG, "", "", None, 0, "nesting"),
    "layers and BMC do not count": ("/OC /L BDC\n/P BMC\n" * 1100 + IMG, "", "", None, 1, ""),
    "EMC drops no clip": (("/P BMC " + CL + "EMC\n") * 1100 + IMG, "", "", None, 0, "nesting"),
    "1023 clips, clip text": (CL * 1023 + T("7 Tr (a) Tj") + IMG, "", "", None, 1, ""),
    "1024 clips, clip text": (CL * 1024 + T("7 Tr (a) Tj") + IMG, "", "", None, 0, "nesting"),
    "1024 clips, empty clip text": (CL * 1024 + T("7 Tr () Tj") + IMG, "", "", None, 1, ""),
    "1024 clips, Tr 7 after the text": (CL * 1024 + T("(a) Tj 7 Tr") + IMG, "", "", None, 1, ""),
    "1024 clips, Tr 3": (CL * 1024 + T("3 Tr (a) Tj") + IMG, "", "", None, 1, ""),
    "annotation: 1023 clips": (IMG, "", "", CL * 1023 + IMG, 2, ""),
    "annotation: 1024 clips": (IMG, "", "", CL * 1024 + IMG, 1, "nesting"),
    "clip text, cm": (T("7 Tr (a) Tj 1 0 0 1 5 5 cm (b) Tj") + IMG, "", "", None, 0, "CTM"),
    "clip text, Tr 0, cm": (T("4 Tr (a) Tj 0 Tr 1 0 0 1 5 5 cm") + IMG, "", "", None, 0, "CTM"),
    "clip text, q cm Q": (T("6 Tr [(a)] TJ q 1 0 0 1 5 5 cm Q") + IMG, "", "", None, 0, "CTM"),
    "clip text, an image in BT": (IMG + T("5 Tr (a) Tj") + IMG, "", "", None, 2, ""),
    "clip text, an image inside BT": (IMG + T("5 Tr (a) Tj " + IMG), "", "", None, 1, "CTM"),
    "cm before the clip text": (T("7 Tr 1 0 0 1 5 5 cm (a) Tj") + IMG, "", "", None, 1, ""),
    "cm in mode 3": (T("3 Tr (a) Tj 1 0 0 1 5 5 cm") + IMG, "", "", None, 1, ""),
    "clip text without a font": ("BT 7 Tr (a) Tj 1 0 0 1 5 5 cm ET " + IMG, "", "", None, 1, ""),
    "clip text, Tm": (T("7 Tr (a) Tj 1 0 0 1 5 5 Tm (b) Tj") + IMG, "", "", None, 1, ""),
    "clip text, a form": (T("7 Tr (a) Tj /Fm Do"), "", "", None, 0, "CTM"),
    "clip text, a pattern": (T("7 Tr (a) Tj " + PF), "", "", None, 0, "CTM"),
    "annotation: clip text, cm": (IMG, "", "", T("7 Tr (a) Tj 1 0 0 1 5 5 cm") + IMG, 1, "CTM"),
    # the text's pattern paints at its flush, while its clip text waits (crafted round 12)
    "clip text filled with a pattern": (
        T("4 Tr /Pattern cs /P scn (a) Tj") + IMG,
        "",
        "",
        None,
        0,
        "CTM",
    ),
    "clip text stroked with a pattern": (
        T("5 Tr /Pattern CS /P SCN (a) Tj") + IMG,
        "",
        "/Im Do ",
        None,
        1,
        "CTM",
    ),
    "pattern text, then clip text": (
        T("300 300 Td /Pattern cs /P scn (a) Tj 7 Tr (b) Tj") + IMG,
        "",
        "",
        None,
        2,
        "",
    ),
    "clip text, then pattern text": (
        T("7 Tr (a) Tj /Pattern cs /P scn 0 Tr (b) Tj") + IMG,
        "",
        "",
        None,
        0,
        "CTM",
    ),
    # and so does its soft mask's group
    "clip text under a soft mask": ("/G gs " + T("4 Tr (a) Tj") + IMG, "", "", None, 0, "CTM"),
    "text under a soft mask, then clip text": (
        "/G gs " + T("(a) Tj 7 Tr (b) Tj") + IMG,
        "",
        "",
        None,
        3,
        "",
    ),
    "clip text with a pattern, cm": (
        T("4 Tr /Pattern cs /P scn (a) Tj 1 0 0 1 5 5 cm") + IMG,
        "",
        "/Im Do ",
        None,
        1,
        "CTM",
    ),
    # a Type3 font's glyphs are run, never gathered as clip text (crafted round 7)
    "Type3 text in mode 7, cm": (
        "BT /F3 12 Tf 7 Tr (a) Tj 1 0 0 1 5 5 cm (a) Tj ET " + IMG,
        "",
        "",
        None,
        1,
        "",
    ),  # fmt: skip
}


def _pdf(cases) -> bytes:
    """One page per case; objects numbered from the page's first."""
    objs: list[bytes] = []

    def add(body: bytes) -> int:
        objs.append(body)
        return len(objs)

    def stream(head: str, data: str) -> int:
        raw = data.encode()
        return add(b"<<" + head.encode() + b" /Length %d>>stream\n" % len(raw) + raw +
                   b"\nendstream")  # fmt: skip

    pages_at = add(b"")  # filled at the end
    layer = add(b"<</Type /OCG /Name (L)>>")
    font = add(b"<</Type /Font /Subtype /Type1 /BaseFont /Helvetica>>")
    glyph = stream("", "1000 0 d0 0 0 800 800 re f")
    type3 = add(f"<</Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix [0.001 0 0 "
                f"0.001 0 0] /CharProcs <</a {glyph} 0 R>> /Encoding <</Differences [97 /a]>> "
                "/FirstChar 97 /LastChar 97 /Widths [1000]>>".encode())  # fmt: skip
    pixels = zlib.compress(bytes((i * 37) % 256 for i in range(4 * 4 * 3)))
    image = add(b"<</Type /XObject /Subtype /Image /Width 4 /Height 4 /ColorSpace /DeviceRGB "
                b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d>>stream\n" % len(pixels)
                + pixels + b"\nendstream")  # fmt: skip
    with_image = f"<</XObject <</Im {image} 0 R>>>>"
    mask = stream(f"/Type /XObject /Subtype /Form /BBox [0 0 600 600] /Resources {with_image} "
                  "/Group <</S /Transparency /CS /DeviceRGB>>", IMG)  # fmt: skip
    gs = add(f"<</SMask <</S /Luminosity /G {mask} 0 R>>>>".encode())
    kids = []
    for content, form, cell, annotation, _, _ in cases:
        fm = stream(f"/Type /XObject /Subtype /Form /BBox [0 0 600 600] /Resources {with_image}",
                    form + IMG)  # fmt: skip
        pattern = stream(f"/Type /Pattern /PatternType 1 /PaintType 1 /TilingType 1 /BBox "
                         f"[0 0 700 700] /XStep 700 /YStep 700 /Resources {with_image}",
                         cell + IMG)  # fmt: skip
        annots = ""
        if annotation is not None:
            ap = stream(f"/Type /XObject /Subtype /Form /BBox [0 0 600 600] /Resources "
                        f"<</XObject <</Im {image} 0 R>> /Font <</F {font} 0 R>>>>",
                        annotation)  # fmt: skip
            annot = add(f"<</Type /Annot /Subtype /Square /Rect [0 0 600 600] /AP <</N {ap} 0 R>>"
                        ">>".encode())  # fmt: skip
            annots = f" /Annots [{annot} 0 R]"
        body = stream("", content)
        kids.append(add(
            f"<</Type /Page /Parent {pages_at} 0 R /MediaBox [0 0 612 792] /Contents {body} 0 R "
            f"/Resources <</XObject <</Im {image} 0 R /Fm {fm} 0 R>> /Font <</F {font} 0 R /F3 "
            f"{type3} 0 R>> /Pattern <</P {pattern} 0 R>> /ExtGState <</G {gs} 0 R>> "
            f"/Properties <</L {layer} 0 R>>>>{annots}>>".encode()
        ))  # fmt: skip
    objs[pages_at - 1] = (f"<</Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] "
                          f"/Count {len(kids)}>>").encode()  # fmt: skip
    root = add(f"<</Type /Catalog /Pages {pages_at} 0 R /OCProperties <</OCGs [{layer} 0 R] "
               f"/D <</ON [{layer} 0 R]>>>>>>".encode())  # fmt: skip
    out, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<</Size %d /Root %d 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objs) + 1, root, xref)  # fmt: skip
    return bytes(out)


@pytest.fixture(scope="module")
def clips_pdf(tmp_path_factory):
    path = tmp_path_factory.mktemp("clips") / "clips.pdf"
    path.write_bytes(_pdf(CASES.values()))
    return path


@pytest.mark.parametrize("page", range(1, len(CASES) + 1), ids=list(CASES))
def test_the_walk_draws_what_mupdf_draws_before_it_stops(clips_pdf, page):
    pymupdf.TOOLS.mupdf_display_errors(False)
    *_, drawn, raised = list(CASES.values())[page - 1]
    with pymupdf.open(clips_pdf) as doc:
        by_mupdf, said = drawn_until_raised(doc[page - 1])
        refs, streams = walk_page(doc, page)
    assert (by_mupdf, bool(said)) == (drawn, bool(raised))  # the case is what it says
    assert raised.lower() in said.lower()
    assert len(refs) == drawn
    assert bool(streams.broken) == bool(raised)
    for found in streams.breaks:
        assert (found.reason, found.drawn) == ("stream_unreadable", drawn)
        assert ("nesting too deep" if raised == "nesting" else "CLIP TEXT") in found.what


def test_the_report_is_complete_its_clipped_pages_damaged(tmp_path, clips_pdf):
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, clips_pdf, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    assert manifest.state == "complete"
    states = [row.state for row in manifest.pages]
    assert states == ["damaged" if case[-1] else "complete" for case in CASES.values()]
    assert [row.expected for row in manifest.pages] == [case[-2] for case in CASES.values()]

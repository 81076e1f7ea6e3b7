"""Classes from the fourteenth crafted round (issue 30), each against MuPDF's page render: an
image whose decode has an alpha of its own (a colour-key /Mask) drawn under a default colour
space, which MuPDF's draw device converts with its alpha kept (clipping colours out of the
profile's gamut otherwise than a conversion without it)."""

from __future__ import annotations

import io

import numpy as np
import pymupdf
import pytest
from PIL import Image

from fixtures import _icc
from fixtures._objects import Objects, classic_pdf, stream
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.slow

SIDE = 8
RGB = np.random.default_rng(14).integers(0, 256, SIDE * SIDE * 3, dtype=np.uint8).tobytes()


def test_a_colour_keyed_image_under_a_default_is_converted_as_the_page_draws_it(tmp_path):
    """Under an ICC /DefaultRGB, MuPDF converts the keyed image's samples with their alpha: out
    of the profile's gamut a channel comes out up to 8 levels off a conversion without it,
    which the archive made (the page, rendered one pixel a sample, is the reference)."""
    built = Objects()
    icc = built.add(stream(b"/N 3", _icc.rgb_profile()))
    drawn = built.add(stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceRGB"
                             b"/BitsPerComponent 8/Mask[0 60 0 255 0 255]", RGB))  # fmt: skip
    built.page(b"<</ColorSpace<</DefaultRGB[/ICCBased %d 0 R]>>/XObject<</I %d 0 R>>>>"
               % (icc, drawn), b"q 8 0 0 8 0 0 cm /I Do Q")  # fmt: skip
    path = tmp_path / "keyed.pdf"
    path.write_bytes(built.pdf())
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived", child
    archived = Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24)))
    assert archived.mode == "RGBA"
    alpha = np.asarray(archived.getchannel("A"), int)
    assert 0 < (alpha == 0).sum() < SIDE * SIDE  # some samples keyed out, not all
    with pymupdf.open(path) as doc:
        pix = doc[0].get_pixmap(clip=pymupdf.Rect(0, 200 - SIDE, SIDE, 200))
    rendered = np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE, pix.n)[..., :3].astype(int)
    over_white = Image.new("RGB", archived.size, (255, 255, 255))
    over_white.paste(archived.convert("RGB"), mask=archived.getchannel("A"))
    assert np.abs(np.asarray(over_white, int) - rendered).max() <= 1


GRAY_2X2 = stream(b"/Type/XObject/Subtype/Image/Width 2/Height 2/ColorSpace/DeviceGray"
                  b"/BitsPerComponent 8", b"\x10\x60\xa0\xf0")  # fmt: skip


def _report(tmp_path, pdf: bytes):
    path = tmp_path / "crafted.pdf"
    path.write_bytes(pdf)
    store = LocalStore(tmp_path / "store")
    return path, run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")


def _mupdf_raises(path) -> str:
    with pymupdf.open(path) as doc, pytest.raises(pymupdf.mupdf.FzErrorBase) as raised:
        doc[0].get_pixmap()
    return str(raised.value)


def _cycle(where: str) -> bytes:
    """A pattern whose cell draws image I, then paints itself (`twice`: a tree of cells), painted
    on the page (`where`: in a soft mask's group, in optional content that is off); image J is
    drawn after it."""
    built = Objects(b"/OCProperties<</OCGs[3 0 R]/D<</OFF[3 0 R]>>>>")
    built.add(b"<</Type/OCG/Name(off)>>")
    drawn, after = built.add(GRAY_2X2), built.add(GRAY_2X2.replace(b"\x10", b"\x11"))
    number = len(built.bodies) + 1
    fills = b"0 0 10 10 re f " * (2 if where == "twice" else 1)
    built.add(stream(b"/PatternType 1/PaintType 1/TilingType 1/BBox[0 0 10 10]/XStep 10"
                     b"/YStep 10/Resources<</Pattern<</P %d 0 R>>/XObject<</I %d 0 R>>>>"
                     % (number, drawn), b"q 10 0 0 10 0 0 cm /I Do Q /Pattern cs /P scn "
                     + fills))  # fmt: skip
    paint = b"/Pattern cs /P scn 0 0 10 10 re f"
    group = built.add(stream(b"/Subtype/Form/BBox[0 0 200 200]/Group<</S/Transparency"
                             b"/CS/DeviceGray>>/Resources<</Pattern<</P %d 0 R>>>>" % number,
                             paint))  # fmt: skip
    ops = {"softmask": b"q /S gs 0 0 50 50 re f Q", "hidden": b"/OC /O BDC " + paint + b" EMC"}
    built.page(b"<</Pattern<</P %d 0 R>>/XObject<</J %d 0 R>>/Properties<</O 3 0 R>>"
               b"/ExtGState<</S<</SMask<</S/Luminosity/G %d 0 R>>>>>>>>" % (number, after, group),
               ops.get(where, paint) + b" q 10 0 0 10 100 100 cm /J Do Q")  # fmt: skip
    return built.pdf()


@pytest.mark.parametrize("where", ["once", "twice"])
def test_a_pattern_painted_inside_its_own_cell_ends_its_page_there(tmp_path, where):
    """MuPDF's renderer paints the pattern again and again until its exception stack runs out
    and raises out of the page: image J after it is never drawn. The walk skipped the cycle, as
    it skips a form's, said the page complete and recorded J (painted twice a cell, following
    it refused the whole report: too_many_images)."""
    path, manifest = _report(tmp_path, _cycle(where))
    assert "exception stack overflow" in _mupdf_raises(path)
    (page,) = manifest.pages
    assert page.state == "damaged" and len(manifest.children) == 1  # the outer cell's image
    (broke,) = page.breaks
    assert broke.reason == "stream_unreadable" and "inside its own cell" in broke.what


def test_a_pattern_cycle_in_a_soft_mask_is_caught_there_and_hidden_is_not_run(tmp_path):
    """A soft mask's group catches the error (MuPDF draws the page on, J included, after the
    cells it ran: how many depends on its exception stack): the page is damaged, J recorded.
    In optional content that is off MuPDF paints nothing: the page is whole."""
    path, manifest = _report(tmp_path, _cycle("softmask"))
    with pymupdf.open(path) as doc:
        doc[0].get_pixmap()  # no error
    (page,) = manifest.pages
    assert page.state == "damaged" and page.breaks[0].reason == "stream_too_deep"
    assert [child.state for child in manifest.children] == ["archived"] * 2
    (tmp_path / "hidden").mkdir()
    path, manifest = _report(tmp_path / "hidden", _cycle("hidden"))
    (page,) = manifest.pages
    assert page.state == "complete"
    assert sorted(child.state for child in manifest.children) == ["archived", "hidden"]


def test_an_image_whose_jbig2_globals_mupdf_cannot_decode_ends_the_page_there(tmp_path):
    """MuPDF decodes an image's /JBIG2Globals when it loads the image and raises out of the
    page's run when it cannot: the image after it is never drawn. The walk recorded both
    images and the JBIG2 one, and said the page complete."""
    built = Objects()
    drawn = built.add(GRAY_2X2)
    globals_ = built.add(stream(b"", bytes(20)))
    jbig2 = built.add(stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace"
                             b"/DeviceGray/BitsPerComponent 1/Filter/JBIG2Decode/DecodeParms"
                             b"<</JBIG2Globals %d 0 R>>" % globals_, b"\x97\x4aJB"))  # fmt: skip
    built.page(
        b"<</XObject<</I %d 0 R/J %d 0 R>>>>" % (drawn, jbig2),
        b"q 9 0 0 9 0 0 cm /I Do Q q 9 0 0 9 20 0 cm /J Do Q q 9 0 0 9 40 0 cm /I Do Q",
    )
    path, manifest = _report(tmp_path, built.pdf())
    assert "cannot decode jbig2 globals" in _mupdf_raises(path)
    (page,) = manifest.pages
    assert page.state == "damaged" and len(manifest.children) == 1
    (broke,) = page.breaks
    assert broke.reason == "stream_unreadable" and "JBIG2 globals" in broke.what


def test_a_page_that_is_a_direct_object_is_drawn_under_its_own_defaults(tmp_path):
    """A page written straight into its parent's /Kids (no object of its own) with an ICC
    /DefaultRGB: MuPDF draws its image through it. The decoder looked for the page's /Resources
    in the object holding it, the page tree node, whose own /DefaultRGB is /DeviceRGB, and
    archived the device values (112 levels off the page here)."""
    built = Objects()
    icc = built.add(stream(b"/N 3", _icc.rgb_profile()))
    drawn = built.add(stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace"
                             b"/DeviceRGB/BitsPerComponent 8", RGB))  # fmt: skip
    content = built.add(stream(b"", b"q 8 0 0 8 0 0 cm /I Do Q"))
    built.pdf()
    built.bodies[1] = (b"<</Type/Pages/Count 1/Resources<</ColorSpace<</DefaultRGB/DeviceRGB>>>>"
                       b"/Kids[<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]/Contents %d 0 R"
                       b"/Resources<</ColorSpace<</DefaultRGB[/ICCBased %d 0 R]>>/XObject"
                       b"<</I %d 0 R>>>>>>]>>" % (content, icc, drawn))  # fmt: skip
    path, manifest = _report(tmp_path, classic_pdf(built.bodies))
    (child,) = manifest.children
    archived = Image.open(
        io.BytesIO(LocalStore(tmp_path / "store").get_bytes(child.object_key, 1 << 24))
    )
    with pymupdf.open(path) as doc:
        pix = doc[0].get_pixmap(clip=pymupdf.Rect(0, 200 - SIDE, SIDE, 200))
    rendered = np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE, pix.n)[..., :3].astype(int)
    device = np.frombuffer(RGB, np.uint8).reshape(SIDE, SIDE, 3).astype(int)
    assert np.abs(device - rendered).max() > 20  # the default changes what the page shows
    assert np.abs(np.asarray(archived.convert("RGB"), int) - rendered).max() <= 1


@pytest.mark.parametrize("where", ["own_oc", "noview_annotation"])
def test_a_jbig2_image_mupdf_never_loads_leaves_its_page_whole(tmp_path, where):
    """An image whose own /OC is off, or in the appearance of a NoView annotation: MuPDF never
    loads it (no error, the image after it drawn), so the page is whole."""
    built = Objects(b"/OCProperties<</OCGs[3 0 R]/D<</OFF[3 0 R]>>>>")
    built.add(b"<</Type/OCG/Name(off)>>")
    drawn = built.add(GRAY_2X2)
    globals_ = built.add(stream(b"", bytes(20)))
    own = b"/OC 3 0 R" if where == "own_oc" else b""
    head = (
        b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceGray"
        b"/BitsPerComponent 1/Filter/JBIG2Decode/DecodeParms<</JBIG2Globals %d 0 R>>%s"
    )
    jbig2 = built.add(stream(head % (globals_, own), b"\x97\x4aJB"))
    look = built.add(stream(b"/Subtype/Form/BBox[0 0 9 9]/Resources<</XObject<</J %d 0 R>>>>"
                            % jbig2, b"q 9 0 0 9 0 0 cm /J Do Q"))  # fmt: skip
    note = built.add(b"<</Type/Annot/Subtype/Square/Rect[50 50 59 59]/F 32/AP<</N %d 0 R>>>>"
                     % look)  # fmt: skip
    shows = b"q 9 0 0 9 20 0 cm /J Do Q " if where == "own_oc" else b""
    built.page(b"<</XObject<</I %d 0 R/J %d 0 R>>>>" % (drawn, jbig2),
               shows + b"q 9 0 0 9 40 0 cm /I Do Q",
               b"" if where == "own_oc" else b"/Annots[%d 0 R]" % note)  # fmt: skip
    path, manifest = _report(tmp_path, built.pdf())
    with pymupdf.open(path) as doc:
        doc[0].get_pixmap()  # no error
    (page,) = manifest.pages
    assert page.state == "complete"
    assert sorted(child.state for child in manifest.children) == ["archived", "hidden"]

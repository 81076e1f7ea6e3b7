"""A /DeviceGray, /DeviceRGB or /DeviceCMYK image is archived as MuPDF's renderer draws it
through the default colour spaces in effect at its draw (issue 30, item 4: "archived as the page
draws it"; crafted round: the archive kept the device values). Each page draws one 8 x 8 image
one pixel a sample; the page MuPDF renders is the reference for every archived pixel, and each
case checks that the device values are not what the page shows (the test fails without the fix).

MuPDF's behaviour, measured here (core/draws/defaults.py says it in full): a page's /DefaultGray,
/DefaultRGB, /DefaultCMYK apply to its images, inline images and an /Indexed image's base; a
form's own defaults replace the page's inside it only; a pattern's own resources' are not read;
the document's output intent applies where no default is named (a page's /DefaultGray
/DeviceGray does not stop it, a form's does); an annotation's appearance is drawn under the
page's; a Type3 glyph's procedure under none (no output intent either), a form inside it under
its own; an sRGB /DefaultRGB changes nothing.
"""

from __future__ import annotations

import io
import zlib

import numpy as np
import pymupdf
import pytest
from PIL import Image, ImageCms

from fixtures import _icc
from fixtures._objects import Objects, form, stream, tiling
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.validate.icc import MAX_PROFILE_BYTES

pytestmark = pytest.mark.slow

SIDE = 8
RNG = np.random.default_rng(30)
RGB = RNG.integers(0, 256, SIDE * SIDE * 3, dtype=np.uint8).tobytes()
GRAY = RNG.integers(0, 256, SIDE * SIDE, dtype=np.uint8).tobytes()
CMYK = RNG.integers(0, 256, SIDE * SIDE * 4, dtype=np.uint8).tobytes()
PLACE = b"q 8 0 0 8 0 0 cm /I Do Q"  # one pixel a sample at the page's bottom left
# linear sRGB primaries, gamma 1: a sample is taken as linear light, sRGB shows it brighter
CALRGB = (b"[/CalRGB<</WhitePoint[0.9505 1 1.089]/Gamma[1 1 1]/Matrix[0.4124 0.2126 0.0193 "
          b"0.3576 0.7152 0.1192 0.1805 0.0722 0.9505]>>]")  # fmt: skip
CALGRAY = b"[/CalGray<</WhitePoint[0.9505 1 1.089]/Gamma 1>>]"
OUTPUT_INTENT = b"/OutputIntents[<</Type/OutputIntent/S/GTS_PDFA1/DestOutputProfile 3 0 R>>]"
GLYPH = b"8 0 d0 q 8 0 0 8 0 0 cm /I Do Q"  # a coloured Type3 glyph that draws the image


def image(space: bytes, data: bytes) -> bytes:
    return stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace%s"
                  b"/BitsPerComponent 8" % space, data)  # fmt: skip


def archived_and_rendered(tmp_path, pdf: bytes) -> tuple[np.ndarray, np.ndarray]:
    path = tmp_path / "defaults.pdf"
    path.write_bytes(pdf)
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived", child
    archived = Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24))).convert("RGB")
    with pymupdf.open(path) as doc:
        pix = doc[0].get_pixmap(clip=pymupdf.Rect(0, 200 - SIDE, SIDE, 200))
    rendered = np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE, pix.n)[..., :3]
    return np.asarray(archived, int), rendered.astype(int)


def device(space: bytes, data: bytes) -> np.ndarray:
    """The image's samples in sRGB as the device space shows them (what was archived): CMYK as
    MuPDF converts it without defaults."""
    if space == b"/DeviceCMYK":
        pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.Pixmap(pymupdf.csCMYK, SIDE, SIDE, data, 0))
        return np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE, 3).astype(int)
    mode = {b"/DeviceGray": "L", b"/DeviceRGB": "RGB"}[space]
    return np.asarray(Image.frombytes(mode, (SIDE, SIDE), data).convert("RGB"), int)


def page_with(resources: bytes, ops: bytes = PLACE, catalog: bytes = b"", extra: bytes = b"",
              **objects) -> bytes:  # fmt: skip
    """One page; `objects` (name: body) added first, in order, their numbers %-formatted into
    the later ones, `resources` and `extra` (the page dictionary's) by name."""
    built = Objects(catalog)
    numbers: dict[bytes, int] = {}
    for name, body in objects.items():  # an image's or profile's bytes are never formatted
        numbers[name.encode()] = built.add(body if name in ("im", "icc") else body % numbers)
    built.page(resources % numbers, ops, extra % numbers)
    return built.pdf()


def rgb_image() -> bytes:
    return image(b"/DeviceRGB", RGB)


def type3(resources: bytes) -> bytes:
    """A Type3 font whose glyph `a` is object %(proc)d, with `resources`."""
    return (b"<</Type/Font/Subtype/Type3/FontBBox[0 0 8 8]/FontMatrix[1 0 0 1 0 0]/CharProcs"
            b"<</a %(proc)d 0 R>>/Encoding<</Differences[97/a]>>/FirstChar 97/LastChar 97"
            b"/Widths[8]/Resources" + resources + b">>")  # fmt: skip


def jpeg() -> bytes:
    encoded = io.BytesIO()
    Image.frombytes("RGB", (SIDE, SIDE), RGB).save(encoded, "JPEG", quality=95, subsampling=0)
    return stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceRGB"
                  b"/BitsPerComponent 8/Filter/DCTDecode", encoded.getvalue())  # fmt: skip


def own(default: bytes) -> bytes:
    """A form whose resources name `default` (`/DefaultRGB ...`) and that draws the image."""
    return form(b"<</ColorSpace<<" + default + b">>/XObject<</I %(im)d 0 R>>>>", PLACE)


def srgb() -> bytes:
    return stream(b"/N 3", ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())


ON_PAGE = b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/XObject<</I %(im)d 0 R>>>>"
GRAY_OI = {"catalog": OUTPUT_INTENT, "icc": stream(b"/N 1", _icc.gray_profile())}
RGB_ICC = stream(b"/N 3", _icc.rgb_profile())
CMYK_ICC = stream(b"/N 4", _icc.cmyk_profile())
SHOWN = b"BT /T3 1 Tf (a) Tj ET"

# fmt: off
CASES = {
    # name: (the PDF, the device space and samples of its image)
    "page /DefaultRGB CalRGB": (lambda: page_with(ON_PAGE, im=rgb_image()), b"/DeviceRGB", RGB),
    "page /DefaultGray CalGray": (lambda: page_with(
        b"<</ColorSpace<</DefaultGray " + CALGRAY + b">>/XObject<</I %(im)d 0 R>>>>",
        im=image(b"/DeviceGray", GRAY)), b"/DeviceGray", GRAY),
    "page /DefaultRGB ICCBased": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB[/ICCBased %(icc)d 0 R]>>/XObject<</I %(im)d 0 R>>>>",
        icc=RGB_ICC, im=rgb_image()), b"/DeviceRGB", RGB),
    "page /DefaultCMYK ICCBased": (lambda: page_with(
        b"<</ColorSpace<</DefaultCMYK[/ICCBased %(icc)d 0 R]>>/XObject<</I %(im)d 0 R>>>>",
        icc=CMYK_ICC, im=image(b"/DeviceCMYK", CMYK)), b"/DeviceCMYK", CMYK),
    "a form's own default, the page has none": (lambda: page_with(
        b"<</XObject<</F %(form)d 0 R>>>>", b"/F Do", im=rgb_image(),
        form=own(b"/DefaultRGB " + CALRGB)), b"/DeviceRGB", RGB),
    "a form's default over the page's": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB[/ICCBased %(icc)d 0 R]>>/XObject<</F %(form)d 0 R>>>>",
        b"/F Do", icc=RGB_ICC, im=rgb_image(), form=own(b"/DefaultRGB " + CALRGB)),
     b"/DeviceRGB", RGB),
    "a form without resources, under the page's": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/XObject<</F %(form)d 0 R/I %(im)d 0 R>>>>",
        b"/F Do", im=rgb_image(),
        form=stream(b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]", PLACE)),
     b"/DeviceRGB", RGB),
    "a pattern's cell, under the page's": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/Pattern<</P %(pattern)d 0 R>>>>",
        b"/Pattern cs /P scn 0 0 8 8 re f", im=rgb_image(),
        pattern=tiling(b"<</XObject<</I %(im)d 0 R>>>>", PLACE, b"/XStep 200/YStep 200")),
     b"/DeviceRGB", RGB),
    "an inline image": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>>>",
        b"q 8 0 0 8 0 0 cm BI /W 8 /H 8 /CS /RGB /BPC 8 ID " + RGB + b" EI Q"),
     b"/DeviceRGB", RGB),
    "an /Indexed image's /DeviceRGB base": (lambda: page_with(
        ON_PAGE, im=image(b"[/Indexed/DeviceRGB 63<" + RGB[:192].hex().encode() + b">]",
                          bytes(range(64)))), b"/DeviceRGB", RGB[:192]),
    "an annotation's appearance, under the page's": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>>>", b"", im=rgb_image(),
        ap=form(b"<</XObject<</I %(im)d 0 R>>>>", PLACE),
        annot=b"<</Type/Annot/Subtype/Stamp/Rect[0 0 200 200]/AP<</N %(ap)d 0 R>>>>",
        extra=b"/Annots[%(annot)d 0 R]"), b"/DeviceRGB", RGB),
    "a JPEG (no longer Pillow's decode)": (lambda: page_with(ON_PAGE, im=jpeg()),
                                           b"/DeviceRGB", RGB),
    "an ICC default LittleCMS refuses: its /Alternate": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB[/ICCBased %(icc)d 0 R]>>/XObject<</I %(im)d 0 R>>>>",
        icc=stream(b"/N 3/Alternate" + CALRGB, _icc.unreadable_profile()), im=rgb_image()),
     b"/DeviceRGB", RGB),
    "the output intent's gray profile": (lambda: page_with(
        b"<</XObject<</I %(im)d 0 R>>>>", **GRAY_OI, im=image(b"/DeviceGray", GRAY)),
     b"/DeviceGray", GRAY),
    "the output intent's RGB profile": (lambda: page_with(
        b"<</XObject<</I %(im)d 0 R>>>>", catalog=OUTPUT_INTENT, icc=RGB_ICC, im=rgb_image()),
     b"/DeviceRGB", RGB),
    "the output intent's CMYK profile": (lambda: page_with(
        b"<</XObject<</I %(im)d 0 R>>>>", catalog=OUTPUT_INTENT, icc=CMYK_ICC,
        im=image(b"/DeviceCMYK", CMYK)), b"/DeviceCMYK", CMYK),
    "a page's /DefaultGray /DeviceGray: the output intent still": (lambda: page_with(
        b"<</ColorSpace<</DefaultGray/DeviceGray>>/XObject<</I %(im)d 0 R>>>>", **GRAY_OI,
        im=image(b"/DeviceGray", GRAY)), b"/DeviceGray", GRAY),
    "a form's default of another kind: the page's stays": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/XObject<</F %(form)d 0 R>>>>", b"/F Do",
        im=rgb_image(), form=own(b"/DefaultRGB/DeviceGray")), b"/DeviceRGB", RGB),
    "a form in a Type3 glyph, under its own": (lambda: page_with(
        b"<</Font<</T3 %(font)d 0 R>>>>", SHOWN, im=rgb_image(),
        form=own(b"/DefaultRGB " + CALRGB), proc=stream(b"", b"8 0 d0 /F Do"),
        font=type3(b"<</XObject<</F %(form)d 0 R>>>>")), b"/DeviceRGB", RGB),
}
# MuPDF draws these as the device values: defaults that do not reach the draw
AS_THEY_ARE = {
    "a pattern's own defaults": (lambda: page_with(
        b"<</Pattern<</P %(pattern)d 0 R>>>>", b"/Pattern cs /P scn 0 0 8 8 re f",
        im=rgb_image(), pattern=tiling(b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/XObject"
                                       b"<</I %(im)d 0 R>>>>", PLACE, b"/XStep 200/YStep 200")),
     b"/DeviceRGB", RGB),
    "an sRGB /DefaultRGB (the usual PDF/A case)": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB[/ICCBased %(icc)d 0 R]>>/XObject<</I %(im)d 0 R>>>>",
        icc=srgb(), im=rgb_image()), b"/DeviceRGB", RGB),
    "a form's /DefaultGray /DeviceGray over the output intent": (lambda: page_with(
        b"<</XObject<</F %(form)d 0 R>>>>", b"/F Do", **GRAY_OI, im=image(b"/DeviceGray", GRAY),
        form=own(b"/DefaultGray/DeviceGray")), b"/DeviceGray", GRAY),
    "a form's /DefaultRGB /DeviceRGB over the page's": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/XObject<</F %(form)d 0 R>>>>", b"/F Do",
        im=rgb_image(), form=own(b"/DefaultRGB/DeviceRGB")), b"/DeviceRGB", RGB),
    "a default that names a colour space resource": (lambda: page_with(
        b"<</ColorSpace<</CS0 " + CALRGB + b"/DefaultRGB/CS0>>/XObject<</I %(im)d 0 R>>>>",
        im=rgb_image()), b"/DeviceRGB", RGB),
    "a Type3 glyph, under the page's default": (lambda: page_with(
        b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/Font<</T3 %(font)d 0 R>>>>", SHOWN,
        im=rgb_image(), proc=stream(b"", GLYPH), font=type3(b"<</XObject<</I %(im)d 0 R>>>>")),
     b"/DeviceRGB", RGB),
    "a Type3 glyph, its font's own default": (lambda: page_with(
        b"<</Font<</T3 %(font)d 0 R>>>>", SHOWN, im=rgb_image(), proc=stream(b"", GLYPH),
        font=type3(b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/XObject<</I %(im)d 0 R>>>>")),
     b"/DeviceRGB", RGB),
    "a Type3 glyph, under the output intent": (lambda: page_with(
        b"<</Font<</T3 %(font)d 0 R>>>>", SHOWN, **GRAY_OI, im=image(b"/DeviceGray", GRAY),
        proc=stream(b"", GLYPH), font=type3(b"<</XObject<</I %(im)d 0 R>>>>")),
     b"/DeviceGray", GRAY),
}
# fmt: on


@pytest.mark.parametrize("name", CASES)
def test_a_device_image_is_archived_through_the_defaults_it_is_drawn_under(tmp_path, name):
    build, space, data = CASES[name]
    archived, rendered = archived_and_rendered(tmp_path, build())
    assert np.abs(device(space, data) - rendered).max() > 20  # the defaults change the page
    assert np.abs(archived - rendered).max() <= 1


@pytest.mark.parametrize("name", AS_THEY_ARE)
def test_defaults_that_do_not_reach_the_draw_leave_it_as_it_is(tmp_path, name):
    build, space, data = AS_THEY_ARE[name]
    archived, rendered = archived_and_rendered(tmp_path, build())
    assert np.abs(archived - rendered).max() <= 1
    assert np.abs(archived - device(space, data)).max() <= 1


MASK_GROUP = b"/Group<</S/Transparency/CS/DeviceGray>>"
DG = b"/DefaultGray " + CALGRAY
# fmt: off
IN_SOFT_MASKS = {  # what the group's defaults, or any, would be: none applies
    "the group's own": {"group": form(b"<</ColorSpace<<" + DG + b">>/XObject<</I %(im)d 0 R>>>>",
                                      PLACE, MASK_GROUP)},
    "the page's": {"page": b"/ColorSpace<<" + DG + b">>",
                   "group": form(b"<</XObject<</I %(im)d 0 R>>>>", PLACE, MASK_GROUP)},
    "the output intent": {**GRAY_OI, "group": form(b"<</XObject<</I %(im)d 0 R>>>>", PLACE,
                                                   MASK_GROUP)},
    "a form's in the group": {
        "inner": own(DG), "group": form(b"<</XObject<</F %(inner)d 0 R>>>>", b"/F Do", MASK_GROUP)},
}
# fmt: on


@pytest.mark.parametrize("name", IN_SOFT_MASKS)
def test_a_soft_mask_s_image_is_drawn_as_its_device_values(tmp_path, name):
    """A luminosity soft mask's group draws its image into the mask as its device values: the
    page's gray through the mask, painted black on white, is 255 minus the image."""
    given = dict(IN_SOFT_MASKS[name])
    catalog, page = given.pop("catalog", b""), given.pop("page", b"")
    objects = {"icc": given.pop("icc")} if "icc" in given else {}
    pdf = page_with(b"<<" + page + b"/ExtGState<</M %(gs)d 0 R>>>>", b"/M gs 0 g 0 0 8 8 re f",
                    catalog, **objects, im=image(b"/DeviceGray", GRAY), **given,
                    gs=b"<</SMask<</Type/Mask/S/Luminosity/G %(group)d 0 R>>>>")  # fmt: skip
    path = tmp_path / "mask.pdf"
    path.write_bytes(pdf)
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived" and child.origin.startswith("softmask/")
    archived = np.asarray(Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24))), int)
    with pymupdf.open(path) as doc:
        pix = doc[0].get_pixmap(clip=pymupdf.Rect(0, 192, 8, 200), colorspace=pymupdf.csGRAY)
    shown = 255 - np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE).astype(int)
    assert np.abs(archived - shown).max() <= 1


def test_a_default_s_profile_over_the_cap_is_dropped_with_a_note(tmp_path):
    """An ICC profile inflating past icc.MAX_PROFILE_BYTES is never parsed: the device space
    stays (MuPDF would use it), and the record says so."""
    big = zlib.compress(_icc.rgb_profile() + bytes(MAX_PROFILE_BYTES), 9)
    icc = stream(b"/N 3/Filter/FlateDecode", big)
    pdf = page_with(b"<</ColorSpace<</DefaultRGB[/ICCBased %(icc)d 0 R]>>/XObject"
                    b"<</I %(im)d 0 R>>>>", icc=icc, im=rgb_image())  # fmt: skip
    path = tmp_path / "big.pdf"
    path.write_bytes(pdf)
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived"
    assert "/DefaultRGB ICC profile dropped: over the 1,048,576-byte cap" in child.notes
    archived = Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24))).convert("RGB")
    assert np.abs(np.asarray(archived, int) - device(b"/DeviceRGB", RGB)).max() == 0


def test_one_image_under_two_defaults_is_two_archived_images(tmp_path):
    """Drawn on the page and in a form with a default of its own: two records whose PNGs
    differ, each as that draw shows it; the same image drawn twice under one default is one
    decode (one object)."""
    built = Objects()
    im = built.add(rgb_image())
    own = built.add(form(b"<</ColorSpace<</DefaultRGB " + CALRGB + b">>/XObject<</I %d 0 R>>>>"
                         % im, PLACE))  # fmt: skip
    built.page(b"<</XObject<</F %d 0 R/I %d 0 R>>>>" % (own, im),
               b"/F Do /F Do q 8 0 0 8 20 0 cm /I Do Q")  # fmt: skip
    path = tmp_path / "twice.pdf"
    path.write_bytes(built.pdf())
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    first, again, plain = manifest.children
    assert all(child.state == "archived" for child in manifest.children)
    assert first.object_key == again.object_key != plain.object_key
    with pymupdf.open(path) as doc:
        pix = doc[0].get_pixmap(clip=pymupdf.Rect(20, 200 - SIDE, 20 + SIDE, 200))
    rendered = np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE, pix.n)[..., :3]
    archived = Image.open(io.BytesIO(store.get_bytes(plain.object_key, 1 << 24))).convert("RGB")
    assert np.abs(np.asarray(archived, int) - rendered.astype(int)).max() <= 1


SRGB_DEFAULT = b"<</ColorSpace<</DefaultRGB[/ICCBased %(icc)d 0 R]>>/XObject<</I %(im)d 0 R>>>>"


@pytest.mark.parametrize(
    ("pdf", "converts"),
    [
        (lambda: page_with(SRGB_DEFAULT, icc=srgb(), im=jpeg()), False),
        (
            lambda: page_with(
                b"<</XObject<</I %(im)d 0 R>>>>", catalog=OUTPUT_INTENT, icc=srgb(), im=jpeg()
            ),
            False,
        ),  # fmt: skip
        (lambda: page_with(ON_PAGE, im=jpeg()), True),
    ],
    ids=["sRGB /DefaultRGB", "sRGB output intent", "CalRGB /DefaultRGB"],
)
def test_defaults_that_convert_no_sample_otherwise_leave_the_usual_decode(pdf, converts):
    """An sRGB /DefaultRGB or output intent (the usual PDF/A case) shows every device sample as
    the device space does: the decoder takes no defaults, so a plain JPEG keeps Pillow's decode
    (1.04-1.11x the CPU through MuPDF's conversion), byte for byte what MuPDF would give."""
    from report_pipeline.core.pdf.pages import page_images
    from report_pipeline.core.validate import defaults

    with pymupdf.open(stream=pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        notes: list[str] = []
        assert (defaults.loaded(doc, ref.defaults, notes) is not None) is converts
        assert not notes

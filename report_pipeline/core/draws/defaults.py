"""The default colour spaces a draw is made under (/DefaultGray, /DefaultRGB, /DefaultCMYK and
the document's output intent), as MuPDF's renderer applies them to /DeviceGray, /DeviceRGB and
/DeviceCMYK samples (an image's, an inline image's, an /Indexed image's base).

What MuPDF 1.28 does, measured with its drawing device (report_pipeline_tests/core/
test_default_colour_spaces.py):
- a page starts with the defaults its resources' /ColorSpace names (`pdf_load_default_colorspaces`),
  then the document's /OutputIntents profile (/DestOutputProfile) for each device space of its
  kind that no default replaced; an annotation's appearance starts there too;
- a form (`pdf_run_xobject`) updates them from its own resources (or, without any, those
  current where it is drawn): a default it names replaces the one in effect inside it (even one
  set to the device space itself), the others stay;
- a soft mask's group draws its images as their device values: no default applies inside it
  (the page's, its own, a form's within it), nor the output intent;
- a pattern's cell runs with the defaults where it paints: its own resources' are not read;
- a Type3 glyph's procedure runs with none at all, not even the output intent (nor its font's
  resources' defaults); a form it draws updates them as anywhere;
- a default MuPDF cannot load, or of another kind (/DefaultRGB /DeviceGray), is ignored; a name
  (/DefaultRGB /CS0) is not looked up; an /ICCBased one whose profile LittleCMS refuses is its
  /Alternate, as MuPDF loads it.

The walk (core/draws/drawn.py) follows MuPDF's own objects: at each update it asks MuPDF
(`pdf_update_default_colorspaces`) and sees which of the three it replaced. A draw keeps, per
device space, where the default in effect comes from: the resources dictionary whose /ColorSpace
names it, as `spec` ("" when none is named anywhere; else "g,r,c": an object number N that is the
dictionary, -N for the /Resources entry of object N, pI for the /Resources of page index I (a
page that is a direct object in /Kids), 0 for none; led by "!" inside a Type3 glyph
or a soft mask's group of a document that has an output intent: it does not apply there). The
decoder loads them again (core/validate/
defaults.py `loaded`) and converts the image's samples with them (`normalize.to_image`), as the
draw device does; identical images under identical defaults share one decode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pymupdf import mupdf

KINDS = ("gray", "rgb", "cmyk")
_GET = (mupdf.ll_fz_default_gray, mupdf.ll_fz_default_rgb, mupdf.ll_fz_default_cmyk)


def pointers(defaults: mupdf.FzDefaultColorspaces) -> tuple[int, int, int]:
    return tuple(int(get(defaults.m_internal).this) for get in _GET)


def address(resources: mupdf.PdfObj) -> int:
    """Where the decoder finds `resources` again: its object number, or minus the number of the
    object whose /Resources it is written in; 0 when neither can be told."""
    if mupdf.pdf_is_indirect(resources):
        return mupdf.pdf_to_num(resources)
    return -mupdf.pdf_obj_parent_num(resources)


@dataclass(frozen=True)
class InEffect:
    """The defaults in effect (MuPDF's object) and where each came from (`spec`'s numbers)."""

    defaults: mupdf.FzDefaultColorspaces = field(compare=False)
    where: tuple[int | str, ...] = (0, 0, 0)
    intent: bool = True  # the output intent applies (not inside a Type3 glyph)
    has_intent: bool = False  # the document has one (MuPDF loaded it for the page)
    frozen: bool = False  # inside a soft mask's group: nothing changes them

    @property
    def key(self) -> tuple[str, bool]:
        """What decides the defaults of what a stream run now draws (`replays`)."""
        return self.spec, self.frozen

    @property
    def spec(self) -> str:
        where = ",".join(map(str, self.where)) if any(self.where) else ""
        return where if self.intent else f"!{where}"


def glyph_defaults(current: InEffect, mask: bool = False) -> InEffect:
    """The defaults a Type3 glyph's procedure (or, `mask`, a soft mask's group, where they stay
    so) starts with: none, no output intent either (said only where the document has one: else
    its draws share with the page's)."""
    if current.frozen:
        return current
    return InEffect(mupdf.fz_new_default_colorspaces(), intent=not current.has_intent,
                    has_intent=current.has_intent, frozen=mask)  # fmt: skip


def page_defaults(pdf_page: mupdf.PdfPage) -> InEffect:
    """The defaults a page (and each of its annotations) starts with: MuPDF's own, its output
    intent included; where each came from, as its resources alone set them."""
    fresh = mupdf.fz_new_default_colorspaces()
    try:
        resources = mupdf.pdf_page_resources(pdf_page)
        named = mupdf.pdf_update_default_colorspaces(fresh, resources)
        at = address(resources)
        if not _found_at(pdf_page.doc(), at, resources):  # a page or node that is no object
            at = f"p{pdf_page.m_internal.super.number}"
        where = _changed((0, 0, 0), fresh, named, at)
        loaded = mupdf.pdf_load_default_colorspaces(pdf_page.doc(), pdf_page)
        oi = mupdf.ll_fz_default_output_intent(loaded.m_internal) is not None
        return InEffect(loaded, where, has_intent=oi)
    except mupdf.FzErrorBase:  # (an output intent MuPDF cannot load): the device spaces
        return InEffect(fresh)


def _found_at(doc: mupdf.PdfDocument, at: int, resources: mupdf.PdfObj) -> bool:
    """Whether `address` finds `resources` again: not when they are written in a page (or page
    tree node) that is itself a direct object in its parent's /Kids, whose /Resources are not
    those; the decoder then looks the page up by its index ("p" and the index)."""
    if at >= 0:
        return at > 0
    holder = mupdf.pdf_load_object(doc, -at)
    found = mupdf.pdf_dict_get(holder, mupdf.PDF_ENUM_NAME_Resources)
    return found.m_internal is not None and mupdf.pdf_objcmp(found, resources) == 0


def updated(current: InEffect, resources: mupdf.PdfObj | None) -> InEffect:
    """The defaults inside a form or soft mask group run with `resources`."""
    if resources is None or not resources.m_internal or current.frozen:
        return current
    if not mupdf.pdf_dict_get(resources, mupdf.PDF_ENUM_NAME_ColorSpace).m_internal:
        return current  # the usual case: nothing to load
    new = mupdf.pdf_update_default_colorspaces(current.defaults, resources)
    where = _changed(current.where, current.defaults, new, address(resources))
    return InEffect(new, where, current.intent, current.has_intent)


def _changed(where, old, new, at: int | str) -> tuple[int | str, ...]:
    pairs = zip(where, pointers(old), pointers(new), strict=True)
    return tuple(at if a != b else w for w, a, b in pairs)

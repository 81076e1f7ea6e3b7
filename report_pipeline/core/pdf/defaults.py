"""The default colour spaces a draw is made under (/DefaultGray, /DefaultRGB, /DefaultCMYK and
the document's output intent), as MuPDF's renderer applies them to /DeviceGray, /DeviceRGB and
/DeviceCMYK samples (an image's, an inline image's, an /Indexed image's base).

What MuPDF 1.28 does, measured with its drawing device (report_pipeline_tests/core/
test_default_colour_spaces.py):
- a page starts with the defaults its resources' /ColorSpace names (`pdf_load_default_colorspaces`),
  then the document's /OutputIntents profile (/DestOutputProfile) for each device space of its
  kind that no default replaced; an annotation's appearance starts there too;
- a form or a soft mask's group (`pdf_run_xobject`) updates them from its own resources (or,
  without any, those current where it is drawn): a default it names replaces the one in effect
  inside it (even one set to the device space itself), the others stay;
- a pattern's cell and a Type3 glyph run with the defaults where they paint: their own resources'
  defaults are not read;
- a default MuPDF cannot load, or of another kind (/DefaultRGB /DeviceGray), is ignored.

The walk (core/draws/drawn.py) follows MuPDF's own objects: at each update it asks MuPDF
(`pdf_update_default_colorspaces`) and sees which of the three it replaced. A draw keeps, per
device space, where the default in effect comes from: the resources dictionary whose /ColorSpace
names it, as `spec` ("" when none is named anywhere; else "g,r,c": an object number N that is the
dictionary, -N for the /Resources entry of object N, 0 for none). The decoder loads them again
(`loaded`) and converts the image's samples with them (`normalize.to_image`), as the draw device
does; identical images under identical defaults share one decode.

An ICC profile (a default's /ICCBased, the output intent's) is weighed before MuPDF parses it:
over `icc.MAX_PROFILE_BYTES` inflated, it is dropped with a note and the device space stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.validate.icc import MAX_PROFILE_BYTES

KINDS = ("gray", "rgb", "cmyk")
_KEYS = (mupdf.PDF_ENUM_NAME_DefaultGray, mupdf.PDF_ENUM_NAME_DefaultRGB,
         mupdf.PDF_ENUM_NAME_DefaultCMYK)  # fmt: skip
_GET = (mupdf.ll_fz_default_gray, mupdf.ll_fz_default_rgb, mupdf.ll_fz_default_cmyk)
_SET = (mupdf.fz_set_default_gray, mupdf.fz_set_default_rgb, mupdf.fz_set_default_cmyk)
_DEVICE = (mupdf.fz_device_gray, mupdf.fz_device_rgb, mupdf.fz_device_cmyk)


def _pointers(defaults: mupdf.FzDefaultColorspaces) -> tuple[int, int, int]:
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
    where: tuple[int, int, int] = (0, 0, 0)

    @property
    def spec(self) -> str:
        return ",".join(map(str, self.where)) if any(self.where) else ""


def page_defaults(pdf_page: mupdf.PdfPage) -> InEffect:
    """The defaults a page (and each of its annotations) starts with: MuPDF's own, its output
    intent included; where each came from, as its resources alone set them."""
    fresh = mupdf.fz_new_default_colorspaces()
    try:
        resources = mupdf.pdf_page_resources(pdf_page)
        named = mupdf.pdf_update_default_colorspaces(fresh, resources)
        where = _changed((0, 0, 0), fresh, named, address(resources))
        return InEffect(mupdf.pdf_load_default_colorspaces(pdf_page.doc(), pdf_page), where)
    except mupdf.FzErrorBase:  # (an output intent MuPDF cannot load): the device spaces
        return InEffect(fresh)


def updated(current: InEffect, resources: mupdf.PdfObj | None) -> InEffect:
    """The defaults inside a form or soft mask group run with `resources`."""
    if resources is None or not resources.m_internal:
        return current
    if not mupdf.pdf_dict_get(resources, mupdf.PDF_ENUM_NAME_ColorSpace).m_internal:
        return current  # the usual case: nothing to load
    new = mupdf.pdf_update_default_colorspaces(current.defaults, resources)
    return InEffect(new, _changed(current.where, current.defaults, new, address(resources)))


def _changed(where, old, new, at: int) -> tuple[int, int, int]:
    pairs = zip(where, _pointers(old), _pointers(new), strict=True)
    return tuple(at if a != b else w for w, a, b in pairs)


# -- the decoder's side ------------------------------------------------------------------------


def loaded(doc: pymupdf.Document, spec: str, notes: list[str]) -> mupdf.FzDefaultColorspaces | None:
    """The defaults `spec` names, with the document's output intent, as MuPDF's renderer draws
    under them; None when they leave every device space as it is (the usual case). What cannot
    be used (a profile over the cap) is left out, said in `notes`."""
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    where = _parse(spec)
    intent = _output_intent(doc, pdf, notes)
    if not any(where) and intent is None:
        return None
    defaults = mupdf.fz_new_default_colorspaces()
    if intent is not None:  # first: a default named anywhere wins over it
        mupdf.fz_set_default_output_intent(defaults, intent)
    for k, at in enumerate(where):
        if at:
            space = _named(pdf, at, k, notes)
            if space is not None:
                _SET[k](defaults, space)
    device = tuple(int(make().m_internal.this) for make in _DEVICE)
    return None if _pointers(defaults) == device else defaults


def _parse(spec: str) -> tuple[int, int, int]:
    try:
        where = tuple(int(part) for part in spec.split(",")) if spec else (0, 0, 0)
    except ValueError:
        return 0, 0, 0
    return where if len(where) == 3 else (0, 0, 0)


def _named(pdf: mupdf.PdfDocument, at: int, k: int, notes: list[str]) -> mupdf.FzColorspace | None:
    """Default `KINDS[k]` of the resources at `at` (`address`), loaded as MuPDF loads it."""
    try:
        if at > 0:
            resources = mupdf.pdf_load_object(pdf, at)
        else:
            resources = mupdf.pdf_dict_get(mupdf.pdf_load_object(pdf, -at),
                                           mupdf.PDF_ENUM_NAME_Resources)  # fmt: skip
        spaces = mupdf.pdf_dict_get(resources, mupdf.PDF_ENUM_NAME_ColorSpace)
        obj = mupdf.pdf_dict_get(spaces, _KEYS[k])
        if not obj.m_internal:
            return None
        what = f"/Default{KINDS[k].upper() if k else 'Gray'}"
        if not _profile_within_cap(pdf, obj, what, notes):
            return None
        return mupdf.pdf_load_colorspace(obj)
    except mupdf.FzErrorBase:  # MuPDF ignores a default it cannot load, and so does the archive
        return None


def _profile_within_cap(pdf, obj: mupdf.PdfObj, what: str, notes: list[str]) -> bool:
    """False (and a note) when `obj` is an /ICCBased space whose profile inflates past the cap."""
    if not mupdf.pdf_is_array(obj):
        return True
    kind = mupdf.pdf_array_get(obj, 0)
    profile = mupdf.pdf_array_get(obj, 1)
    if mupdf.pdf_to_name(kind) != "ICCBased" or not mupdf.pdf_is_stream(profile):
        return True
    return _within_cap(mupdf.pdf_to_num(profile), pdf, what, notes)


def _within_cap(number: int, pdf, what: str, notes: list[str]) -> bool:
    try:
        held = mupdf.fz_skip(mupdf.pdf_open_stream_number(pdf, number), MAX_PROFILE_BYTES + 1)
    except mupdf.FzErrorBase:
        return True  # MuPDF cannot read it either: it falls back as it does on the page
    if held <= MAX_PROFILE_BYTES:
        return True
    notes.append(f"{what} ICC profile dropped: over the {MAX_PROFILE_BYTES:,}-byte cap; "
                 "the device colour space stays")  # fmt: skip
    return False


def _output_intent(doc: pymupdf.Document, pdf, notes: list[str]) -> mupdf.FzColorspace | None:
    """The document's output intent as MuPDF loads it (the first /OutputIntents entry with a
    /DestOutputProfile), its profile weighed first; None when it has none."""
    if doc.xref_get_key(doc.pdf_catalog(), "OutputIntents")[0] == "null":
        return None
    root = mupdf.pdf_dict_get(mupdf.pdf_trailer(pdf), mupdf.PDF_ENUM_NAME_Root)
    intents = mupdf.pdf_dict_get(root, mupdf.PDF_ENUM_NAME_OutputIntents)
    for i in range(mupdf.pdf_array_len(intents)):
        profile = mupdf.pdf_dict_get(mupdf.pdf_array_get(intents, i),
                                     mupdf.PDF_ENUM_NAME_DestOutputProfile)  # fmt: skip
        if mupdf.pdf_is_stream(profile):
            if not _within_cap(mupdf.pdf_to_num(profile), pdf, "output intent", notes):
                return None
            break
    try:
        intent = mupdf.pdf_document_output_intent(pdf)
    except mupdf.FzErrorBase:
        return None
    return intent if intent.m_internal else None

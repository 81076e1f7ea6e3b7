"""The default colour spaces a draw is made under, loaded again for its decode: what the walk
recorded (core/draws/defaults.py `InEffect.spec`) and the document's output intent, as MuPDF's
renderer draws under them.

An ICC profile (a default's /ICCBased, the output intent's) is weighed before MuPDF parses it:
over `icc.MAX_PROFILE_BYTES` inflated, it is dropped with a note and the device space stays.
"""

from __future__ import annotations

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.draws.defaults import KINDS, pointers
from report_pipeline.core.validate.icc import MAX_PROFILE_BYTES

_KEYS = (mupdf.PDF_ENUM_NAME_DefaultGray, mupdf.PDF_ENUM_NAME_DefaultRGB,
         mupdf.PDF_ENUM_NAME_DefaultCMYK)  # fmt: skip
_SET = (mupdf.fz_set_default_gray, mupdf.fz_set_default_rgb, mupdf.fz_set_default_cmyk)
_DEVICE = (mupdf.fz_device_gray, mupdf.fz_device_rgb, mupdf.fz_device_cmyk)


# the last document's defaults, by spec: each profile is weighed and loaded once, not once an
# image (MuPDF's colour spaces are the context's, not the document's: kept past a reopening)
_LOADED: dict[tuple[int, str], dict[str, tuple[object, tuple[str, ...]]]] = {}
_KEPT = 256  # specs kept for a document (a page's draws name a few)


def loaded(doc: pymupdf.Document, spec: str, notes: list[str]) -> mupdf.FzDefaultColorspaces | None:
    """The defaults `spec` names, with the document's output intent, as MuPDF's renderer draws
    under them; None when they leave every device space as it is (the usual case). What cannot
    be used (a profile over the cap) is left out, said in `notes`."""
    key = (id(doc), doc.name)
    if key not in _LOADED:
        _LOADED.clear()
    found = _LOADED.setdefault(key, {})
    if spec not in found:
        if len(found) >= _KEPT:
            found.clear()
        said: list[str] = []
        found[spec] = (_load(doc, spec, said), tuple(said))
    defaults, said = found[spec]
    notes.extend(said)
    return defaults


def _load(doc: pymupdf.Document, spec: str, notes: list[str]) -> mupdf.FzDefaultColorspaces | None:
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    where = _parse(spec.removeprefix("!"))  # "!": drawn without the output intent
    intent = None if spec.startswith("!") else _output_intent(doc, pdf, notes)
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
    now = pointers(defaults)
    changed = (k for k in range(3) if now[k] != device[k])
    return defaults if any(_converts_otherwise(k, defaults) for k in changed) else None


# Samples of each device space, every component at 17 levels (gray 256): what a default must
# leave as the device space shows them to count as changing nothing
_PROBES = (bytes(range(256)),
           bytes(v for r in range(17) for g in range(17) for b in range(17)
                 for v in (min(r * 16, 255), min(g * 16, 255), min(b * 16, 255))),
           bytes(v for c in range(0, 256, 51) for m in range(0, 256, 51) for y in range(0, 256, 51)
                 for k in range(0, 256, 51) for v in (c, m, y, k)))  # fmt: skip


def _converts_otherwise(k: int, defaults: mupdf.FzDefaultColorspaces) -> bool:
    """Whether device space `KINDS[k]` comes out in sRGB otherwise under `defaults` than without
    any: an sRGB /DefaultRGB or output intent (the usual PDF/A case) does not, and leaves the
    image to the archive's usual decode (Pillow's for a plain JPEG), byte for byte the same."""
    n = (1, 3, 4)[k]
    data = _PROBES[k]
    pix = mupdf.fz_new_pixmap(_DEVICE[k](), len(data) // n, 1, mupdf.FzSeparations(), 0)
    mupdf.fz_pixmap_samples_memoryview(pix)[:] = data
    params, rgb = mupdf.FzColorParams(), mupdf.fz_device_rgb()
    try:
        under = mupdf.fz_convert_pixmap(pix, rgb, mupdf.FzColorspace(), defaults, params, 0)
        plain = mupdf.fz_convert_pixmap(pix, rgb, mupdf.FzColorspace(),
                                        mupdf.FzDefaultColorspaces(), params, 0)  # fmt: skip
    except mupdf.FzErrorBase:
        return True
    return bytes(mupdf.fz_pixmap_samples_memoryview(under)) != bytes(
        mupdf.fz_pixmap_samples_memoryview(plain)
    )


def _parse(spec: str) -> tuple[int | str, ...]:
    try:
        where = tuple(_part(part) for part in spec.split(",")) if spec else (0, 0, 0)
    except ValueError:
        return 0, 0, 0
    return where if len(where) == 3 else (0, 0, 0)


def _part(part: str) -> int | str:
    """An object's number (`int`), or "pI": page index I (core/draws/defaults.py `_found_at`)."""
    if part.startswith("p") and part[1:].isdigit():
        return part
    return int(part)


def _named(
    pdf: mupdf.PdfDocument, at: int | str, k: int, notes: list[str]
) -> mupdf.FzColorspace | None:
    """Default `KINDS[k]` of the resources at `at` (`address`), loaded as MuPDF loads it."""
    try:
        if isinstance(at, str):  # a page that is a direct object: found by its index
            page = mupdf.pdf_lookup_page_obj(pdf, int(at[1:]))
            resources = mupdf.pdf_dict_get_inheritable(page, mupdf.PDF_ENUM_NAME_Resources)
        elif at > 0:
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

"""The worker's unit of work: one image occurrence in, a validated PNG or a quarantine out.

Used unchanged by the Dagster ops, the preview command and the benchmark's plain loop.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import pymupdf
from PIL import Image
from pymupdf import mupdf

from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.outcome import ImageOutcome
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.model.wording import said
from report_pipeline.core.pdf.pages import (
    ImageRef,
    components_of,
    declared_int,
    filter_chain,
    image_entry,
    raw_stream,
)
from report_pipeline.core.validate import codestream, icc, inline, normalize, shortfall, validation
from report_pipeline.core.validate import defaults as colour_defaults
from report_pipeline.core.validate.prefix import decode_prefix, parm
from report_pipeline.core.validate.validation import Quarantined

_TRUNCATION_WORDS = ("premature", "truncat", "end of data", "read error", "unexpected eof")
# What MuPDF's Flate filter says of data without its adler32 checksum (or with a wrong one): the
# samples may all be there; when they are not, MuPDF pads the image and says so.
_FLATE_FRAMING = ("premature end of data in flate filter", "ignoring zlib error")
# the colour spaces Pillow's decode is drawn in as it is: only with the components it declares
_PLAIN_SPACES = {("L", "/DeviceGray"), ("RGB", "/DeviceRGB")}
# MuPDF throws FZ_ERROR_SYSTEM "malloc (N bytes) failed" when the address-space limit is reached.
# libjpeg and zlib, inside MuPDF, say "insufficient memory".
_ALLOCATION_FAILED = re.compile(
    r"\b(?:malloc|calloc|realloc)\b.*\bfailed\b|out of memory|insufficient memory", re.I
)
# the sample depths MuPDF unpacks (none given, 0 and one that is not an integer read as 8); a
# stencil mask is 1 bit whatever it says, a JPX codestream states its own
_DEPTHS = {-1, 0, 1, 2, 4, 8, 16}
_READ_AS_8 = {-1, 0, 8}
_PILLOW_GAVE_UP = {"truncated", "undecodable"}  # MuPDF gets a say; its truncation warnings rule
pymupdf.TOOLS.mupdf_display_errors(False)
pymupdf.TOOLS.mupdf_display_warnings(False)


@dataclass(frozen=True)
class Processed:
    outcome: ImageOutcome
    payload: bytes | None  # the normalized PNG, or the raw stream kept as quarantine evidence


def _fast_path_ok(doc: pymupdf.Document, ref: ImageRef, image: Image.Image) -> bool:
    """A JPEG in plain gray/RGB with no Decode array decodes the same in Pillow and MuPDF, when
    its codestream has the components its colour space declares and samples them all alike. A
    JPEG whose chroma is sampled coarser than its luma (4:2:0, 4:2:2: most photographs) is
    upsampled as its decoder chooses, libjpeg-turbo's way in Pillow (and poppler), IJG
    libjpeg's in MuPDF, up to tens of levels apart at colour edges: MuPDF decodes it, so the
    archive holds what the page draws. Otherwise the page draws what
    MuPDF makes of them (an RGB JPEG declared /DeviceGray: its samples read as gray), so MuPDF
    decodes it. So does a JPEG whose /DecodeParms set /ColorTransform: MuPDF follows it (0: an
    RGB JPEG's samples are drawn as they are, not converted from YCbCr), Pillow does not. And a
    JPEG whose /SMask has a /Matte: its colours are premultiplied, MuPDF divides them back. A
    colour-key /Mask (an array) makes the pixels it keys transparent in MuPDF's decode, and a
    /BitsPerComponent other than 8 makes MuPDF read the JPEG's 8-bit samples at that depth (the
    page draws them so): Pillow's decode has neither."""
    space = doc.xref_get_key(ref.xref, "ColorSpace")[1]
    decode = image_entry(doc, ref.xref, "Decode")[0]
    transform = any("/ColorTransform" in parms for parms in ref.parms)
    matte = bool(ref.smask) and doc.xref_get_key(ref.smask, "Matte")[0] != "null"
    depth = declared_int(doc, ref.xref, "BitsPerComponent")[0] in _READ_AS_8
    plain = (image.mode, space) in _PLAIN_SPACES and decode == "null" and depth
    keyed = _colour_key(doc, ref.xref)
    return (
        plain
        and not transform
        and not matte
        and not keyed
        and not _subsampled(image)
        and not _transform_signalled(image)
    )


def _transform_signalled(image: Image.Image) -> bool:
    """A 3-component JPEG whose colour transform is said by more than the default: an Adobe
    APP14 marker, or component ids R G B. libjpeg-turbo (Pillow) and MuPDF weigh these against
    a JFIF marker differently (JFIF plus APP14 transform 0, or plus ids R G B, or APP14 transform
    1 with ids R G B: one decodes YCbCr, the other RGB, up to 222 levels apart), so MuPDF
    decodes it, as the page draws it."""
    if image.mode != "RGB":
        return False
    ids = tuple(layer[0] for layer in getattr(image, "layer", None) or ())
    return "adobe" in image.info or ids == (ord("R"), ord("G"), ord("B"))


def _colour_key(doc: pymupdf.Document, xref: int) -> bool:
    """The image's /Mask is an array (colour-key masking), directly or by reference."""
    kind, value = doc.xref_get_key(xref, "Mask")
    if kind == "xref":
        number = int(value.split()[0])
        if not 0 < number < doc.xref_length() or doc.xref_is_stream(number):
            return False
        return doc.xref_object(number, compressed=True).lstrip().startswith("[")
    return kind == "array"


def _subsampled(image: Image.Image) -> bool:
    """The JPEG's components are not all sampled alike (Pillow's `layer`: id, horizontal and
    vertical sampling factors, quantization table, per component)."""
    return len({(h, v) for _, h, v, _ in getattr(image, "layer", None) or ()}) > 1


def _file_bytes(doc: pymupdf.Document) -> float:
    """The size of the file `doc` was opened from (unbounded for a document in memory)."""
    try:
        return os.path.getsize(doc.name) if doc.name else math.inf
    except OSError:
        return math.inf


def _check_stream(
    doc: pymupdf.Document, xref: int, size: tuple[int, int],
    chain: tuple[tuple[str, ...], tuple[str, ...]], limits: Limits,
) -> tuple[bytes, str | None]:  # fmt: skip
    """Size, signature, declared and header dimensions of one image stream, without decoding it.
    `chain`: its filters and their parameters (`filter_chain`)."""
    filters, parms = chain
    declared = declared_int(doc, xref, "Length")[0]
    # a /Length past the file's end is no stream's: MuPDF finds where it ends, and so do we
    # (the file's size is asked only of a /Length over the cap)
    if declared > limits.max_image_stream_bytes and declared <= _file_bytes(doc):
        validation.check_size(declared, limits)
    raw = _raw(doc, xref)
    validation.check_size(len(raw), limits)
    try:
        signature = validation.check_codec(filters[0], raw) if filters else None
        validation.check_dimensions(*size, limits)
        validation.check_codestream(raw, filters, list(parms), size, limits)
        if filters and filters[-1] == "JBIG2Decode":
            _check_jbig2_globals(doc, parms[-1], limits)
    except Quarantined as bad:
        bad.evidence = raw  # read, and within the stream cap
        raise
    return raw, signature


def _raw(doc: pymupdf.Document, xref: int) -> bytes:
    """`raw_stream`; a stream whose /Crypt filter names one the document does not define is
    `undecodable` (MuPDF cannot read it, and draws nothing of it)."""
    try:
        return raw_stream(doc, xref)
    except mupdf.FzErrorBase as error:
        raise Quarantined("undecodable", f"MuPDF could not decrypt it: {said(error)}") from None


def _check_jbig2_globals(doc: pymupdf.Document, parms: str, limits: Limits) -> None:
    """A /JBIG2Globals stream is decoded with the image: its stated sizes meet the caps."""
    found = re.search(r"/JBIG2Globals\s+(\d+)\s+\d+\s+R", parms)
    if not found or not doc.xref_is_stream(int(found.group(1))):
        return
    xref = int(found.group(1))
    validation.check_size(max(0, declared_int(doc, xref, "Length")[0]), limits)
    raw = _raw(doc, xref)
    validation.check_size(len(raw), limits)
    data, _ = decode_prefix(raw, *filter_chain(doc, xref))  # bounded, whatever it inflates to
    for width, height in codestream.jbig2_global_sizes(data):
        validation.check_dimensions(width, max(height, 1), limits)


def _precheck(doc: pymupdf.Document, ref: ImageRef, limits: Limits) -> tuple[bytes, str | None]:
    """Every check that needs no decode, for the image and its soft mask alike."""
    _check_declared_size(doc, ref.xref)
    chain = (ref.filters, ref.parms)
    raw, signature = _check_stream(doc, ref.xref, (ref.width, ref.height), chain, limits)
    if ref.smask and not doc.xref_is_stream(ref.smask):
        raise Quarantined("bad_mask_reference", "its /SMask is not an image stream")
    for mask, entry in ((ref.smask, "/SMask"), (_explicit_mask(doc, ref), "/Mask")):
        if not mask:
            continue
        size = tuple(declared_int(doc, mask, key)[0] for key in ("Width", "Height"))
        try:
            _check_declared_size(doc, mask, f"its {entry}'s ")
            _check_stream(doc, mask, size, filter_chain(doc, mask), limits)
        except Quarantined as bad:
            bad.evidence = raw  # the image's own stream, not its mask's
            raise
    return raw, signature


def _explicit_mask(doc: pymupdf.Document, ref: ImageRef) -> int:
    """The object number of the image's /Mask when it is a stream (an explicit mask), else 0;
    an /SMask overrides it, as in MuPDF."""
    if ref.inline is not None or ref.smask:
        return 0
    kind, value = doc.xref_get_key(ref.xref, "Mask")
    if kind != "xref":
        return 0
    number = int(value.split()[0])
    return number if doc.xref_is_stream(number) else 0


def _mask_coverage(doc: pymupdf.Document, xref: int, size: tuple[int, int]) -> Image.Image | None:
    """Where MuPDF paints the image of `size` pixels through its explicit /Mask (255) and where
    not (0), as MuPDF reads the mask (with or without /ImageMask, its /Decode); None when it
    has none. A mask larger than the image (on either side) is scaled by MuPDF's draw device, as
    the page draws it over the image: averaged (its edges partly covered), not sampled."""
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    pymupdf.TOOLS.reset_mupdf_warnings()
    try:
        stencil = mupdf.pdf_load_image(pdf, mupdf.pdf_new_indirect(pdf, xref, 0)).mask()
        if not stencil.m_internal:
            return None
        area = mupdf.FzIrect(mupdf.fz_infinite_irect)
        # drawn at its own size: MuPDF decodes an image for the scale its matrix asks, and at
        # the identity (one unit) it subsampled the mask, which came back blurred or flat
        full = mupdf.FzMatrix(stencil.m_internal.w, 0, 0, stencil.m_internal.h, 0, 0)
        if stencil.m_internal.w > size[0] or stencil.m_internal.h > size[1]:
            pix = _drawn_mask(stencil, size)
        else:  # a smaller one is drawn with hard edges: apply_stencil scales it so
            pix = pymupdf.Pixmap(mupdf.fz_get_pixmap_from_image(stencil, area, full)[0])
    except MemoryError:
        raise MemoryError("MuPDF could not allocate the image's mask") from None
    except Exception as exc:  # MuPDF reports bad streams with several exception types
        if _ALLOCATION_FAILED.search(str(exc)):
            raise MemoryError("MuPDF could not allocate the image's mask") from None
        raise Quarantined("undecodable", f"MuPDF could not decode its /Mask: {said(exc)}") from None
    if _short(pymupdf.TOOLS.mupdf_warnings()):
        raise Quarantined("truncated", "MuPDF had to pad the image's short /Mask stream")
    return Image.frombytes("L", (pix.width, pix.height), bytes(pix.samples)[pix.n - 1 :: pix.n])


def _soft_mask(doc: pymupdf.Document, ref: ImageRef, size: tuple[int, int]) -> Image.Image:
    """The image's /SMask as MuPDF's renderer draws it over the image's `size`: loaded with the
    image, as a mask (its own /ColorSpace ignored, one gray sample a pixel read from its data,
    its /Decode applied), and a mask of another size scaled by MuPDF's draw device. Decoded as
    an image of its own, a mask declared /DeviceRGB or /Indexed came out as colours made gray,
    not the samples the page is drawn through, and one of another size was scaled by Pillow.
    A mask MuPDF does not load or decode gets the reason its stream gives as an image."""
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    pymupdf.TOOLS.reset_mupdf_warnings()
    try:
        mask = mupdf.pdf_load_image(pdf, mupdf.pdf_new_indirect(pdf, ref.xref, 0)).mask()
        if not mask.m_internal:
            return _mupdf_decode(doc, ref.smask)
        if (mask.m_internal.w, mask.m_internal.h) == size:
            area = mupdf.FzIrect(mupdf.fz_infinite_irect)
            full = mupdf.FzMatrix(size[0], 0, 0, size[1], 0, 0)
            pix = pymupdf.Pixmap(mupdf.fz_get_pixmap_from_image(mask, area, full)[0])
        else:
            pix = _drawn_mask(mask, size)
    except MemoryError:
        raise MemoryError("MuPDF could not allocate the image's soft mask") from None
    except Exception as exc:  # MuPDF reports bad streams with several exception types
        if _ALLOCATION_FAILED.search(str(exc)):
            raise MemoryError("MuPDF could not allocate the image's soft mask") from None
        _mupdf_decode(doc, ref.smask)  # the reason its stream gives, when it gives one
        raise Quarantined(
            "undecodable", f"MuPDF could not decode its /SMask: {said(exc)}"
        ) from None
    if _short(pymupdf.TOOLS.mupdf_warnings()):
        _mupdf_decode(doc, ref.smask)
        raise Quarantined("truncated", "MuPDF had to pad the image's short /SMask stream")
    return Image.frombytes("L", (pix.width, pix.height), bytes(pix.samples)[:: pix.n])


def _drawn_mask(mask: mupdf.FzImage, size: tuple[int, int]) -> pymupdf.Pixmap:
    """`mask` drawn over `size` pixels by MuPDF's draw device, as the page draws a soft mask
    of another size than its image: the coverage it leaves in an alpha-only pixmap."""
    width, height = size
    drawn = mupdf.fz_new_pixmap(mupdf.FzColorspace(), width, height, mupdf.FzSeparations(), 1)
    mupdf.fz_clear_pixmap(drawn)
    device = mupdf.fz_new_draw_device(mupdf.FzMatrix(), drawn)
    white = mupdf.new_floats(1)
    mupdf.floats_setitem(white, 0, 1.0)
    try:
        place = mupdf.FzMatrix(width, 0, 0, height, 0, 0)  # row 0 on top, a pixel a sample
        gray = mupdf.fz_device_gray()
        mupdf.fz_fill_image_mask(device, mask, place, gray, white, 1.0, mupdf.FzColorParams())
        mupdf.fz_close_device(device)
    finally:
        mupdf.delete_floats(white)
    return pymupdf.Pixmap(drawn)


def _check_declared_size(doc: pymupdf.Document, xref: int, whose: str = "") -> None:
    """/Width and /Height must be integers (directly or by reference): say which is not, and
    `whose` (a mask's: "its /SMask's ")."""
    for key in ("Width", "Height"):
        value, written = declared_int(doc, xref, key)
        if value == -1 and written != "-1":
            raise Quarantined("bad_dimensions", f"{whose}/{key} {written} is not an integer")


def _strict_decode(
    doc, ref: ImageRef, raw: bytes, limits: Limits, drawn_as_is: bool = True
) -> tuple[Image.Image | None, str]:
    """Decode with the strictest decoder for the codec; return the image if it is usable as is,
    and what became of an ICC profile its codestream embeds (icc.py).

    None leaves the image to MuPDF, also when Pillow rejects a JPEG/JPX that MuPDF may decode,
    and when the draw's default colour spaces change what it shows (not `drawn_as_is`).
    """
    if ref.filters in {("DCTDecode",), ("JPXDecode",)}:
        try:
            body = codestream.jpeg_body(raw) if ref.filters == ("DCTDecode",) else raw
            image = validation.decode_file_image(body, ref, limits)
        except Quarantined as bad:
            if bad.reason in _PILLOW_GAVE_UP:
                return None, ""
            raise
        fast = drawn_as_is and _fast_path_ok(doc, ref, image)
        plain = normalize.plain_mode(image) if fast else None
        return plain, icc.profile_note(image)
    if ref.filters == ("FlateDecode",):
        components = components_of(doc, ref.xref)
        if components:
            predictor = parm(ref.parms[0] if ref.parms else "", "Predictor", 1)
            expected = validation.expected_flate_bytes(ref, components, predictor)
            validation.check_flate_complete(raw, expected)
    return None, ""


def _mupdf_decode(doc: pymupdf.Document, xref: int, ref: ImageRef | None = None,
                  defaults=None) -> Image.Image:  # fmt: skip
    """MuPDF's decode of an image XObject (or of the inline image `ref`), short data refused;
    in sRGB through the draw's default colour spaces (`defaults`: core/draws/defaults.py)."""
    pymupdf.TOOLS.reset_mupdf_warnings()
    try:
        image = (normalize.to_image(inline.pixmap(ref), defaults) if ref
                 else normalize.pixmap_image(doc, xref, defaults))  # fmt: skip
    except MemoryError:  # Python's own allocation (the pixmap's samples), not bad bytes
        raise MemoryError("MuPDF could not allocate the image") from None
    except Exception as exc:  # MuPDF reports bad streams with several exception types
        if _ALLOCATION_FAILED.search(str(exc)):  # its malloc under the decoder's RLIMIT_AS
            raise MemoryError("MuPDF could not allocate the image") from None
        failed = Quarantined("undecodable", f"MuPDF could not decode it: {said(exc)}")
        raise _explained(doc, xref, ref, failed, "") from None
    warnings = pymupdf.TOOLS.mupdf_warnings()
    if _short(warnings):
        padded = Quarantined("truncated", "MuPDF had to pad a short image stream")
        raise _explained(doc, xref, ref, padded, warnings)
    return image


def _short(warnings: str) -> bool:
    """MuPDF's warnings say the image's data ended before its samples did (a Flate stream
    that only lacks its checksum delivered every sample: MuPDF did not pad it)."""
    said = [line for line in warnings.lower().splitlines()
            if not any(framing in line for framing in _FLATE_FRAMING)]  # fmt: skip
    return any(word in line for line in said for word in _TRUNCATION_WORDS)


def _explained(
    doc: pymupdf.Document, xref: int, ref: ImageRef | None, fallback: Quarantined, said: str
) -> Quarantined:
    """`fallback`, or the reason the image's sample depth, its JPEG, or its bilevel codec and
    what it declares, gives for MuPDF's failure (shortfall.py)."""
    if ref is not None:  # an inline image: its bytes, its components as MuPDF parsed them
        kind = inline.declared_type(ref)
        if fallback.reason == "truncated" and (text := inline.ascii85_text(doc, ref)):
            return shortfall.early_end(fallback, text)
        if kind == "ccittfax":
            if not ref.inline.m_internal.imagemask:
                fallback = shortfall.bilevel(fallback, "CCITTFaxDecode", ref.inline.n(), ref.bpc)
            return shortfall.malformed(fallback, said)
        if kind == "flate":
            return _corrupt_flate(fallback, ref)
        jpeg = inline.raw_bytes(ref) if kind == "jpeg" else None
        return shortfall.explain(fallback, jpeg, True, ref.inline.n(), said, ref.bpc)
    filters, parms = filter_chain(doc, xref)
    stencil = image_entry(doc, xref, "ImageMask")[1] == "true"
    bpc = declared_int(doc, xref, "BitsPerComponent")[0]
    if not stencil and filters[-1:] != ("JPXDecode",) and bpc not in _DEPTHS:
        return Quarantined(
            "unsupported_precision",
            f"/BitsPerComponent {bpc}: MuPDF decodes samples of 1, 2, 4, 8 or 16 bits only",
        )
    fallback = shortfall.bad_text(fallback, said)
    if filters[:1] == ("ASCII85Decode",):  # within the stream cap: checked before the decode
        fallback = shortfall.early_end(fallback, raw_stream(doc, xref))
    if filters and filters[-1] in shortfall.BILEVEL:
        fallback = shortfall.bilevel(
            fallback, filters[-1], None if stencil else components_of(doc, xref), bpc
        )
        return shortfall.malformed(fallback, said) if filters[-1] == "CCITTFaxDecode" else fallback
    depth = bpc if bpc > 0 else 8  # none given, or 0: MuPDF reads 8
    if filters[-1:] not in (("DCTDecode",), ("JPXDecode",)):  # samples as the stream holds them
        fallback = _icc_alternate(doc, xref, fallback, depth)
    if filters[-1:] in (("FlateDecode",), ("LZWDecode",)):
        width = declared_int(doc, xref, "Width")[0]
        return shortfall.predictor_rows(fallback, parms[-1], components_of(doc, xref), depth, width)
    if not filters or filters[-1] != "DCTDecode":
        return fallback
    raw = raw_stream(doc, xref)  # within the stream cap: checked before the decode
    try:
        jpeg, whole = decode_prefix(raw, filters[:-1], parms[:-1]) if filters[1:] else (raw, True)
    except Quarantined:
        return fallback
    spaces = _icc_spaces(doc, xref) if fallback.reason == "truncated" else None
    if spaces is not None and whole and codestream.jpeg_reaches_eoi(jpeg):
        components = _jpeg_components(jpeg)
        fallback = shortfall.alternate(fallback, *spaces, components >= spaces[0])
    return shortfall.explain(fallback, jpeg, whole, components_of(doc, xref), said, depth)


def _jpeg_components(jpeg: bytes) -> int:
    try:
        return codestream.jpeg_frame(jpeg)[1]
    except Quarantined:
        return 0


def _icc_alternate(
    doc: pymupdf.Document, xref: int, fallback: Quarantined, depth: int
) -> Quarantined:
    """An /ICCBased image MuPDF padded: when the colour space MuPDF loads for it (its
    /Alternate, the profile unusable) takes more components than /N declares, and the stream
    holds every sample /N makes (read through MuPDF's own filters, at most that many bytes,
    thrown away as read), `colorspace_mismatch` (shortfall.alternate); else `fallback`."""
    spaces = _icc_spaces(doc, xref) if fallback.reason == "truncated" else None
    if spaces is None:
        return fallback
    declared, used = spaces
    width, height = (declared_int(doc, xref, key)[0] for key in ("Width", "Height"))
    if used <= declared or width < 1 or height < 1:  # read nothing that cannot tell
        return fallback
    need = height * ((width * declared * depth + 7) // 8)  # within the pixel cap: checked
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    try:
        held = mupdf.fz_skip(mupdf.pdf_open_stream_number(pdf, xref), need)
    except Exception:  # MuPDF raised on its data: nothing more to tell
        return fallback
    return shortfall.alternate(fallback, declared, used, held >= need)


def _icc_spaces(doc: pymupdf.Document, xref: int) -> tuple[int, int] | None:
    """(the components /N declares, those of the colour space MuPDF loads for it) for an image
    in an /ICCBased colour space with an integer /N; None for any other. The space is loaded
    as MuPDF's image loader loads it: no samples are read."""
    pdf = mupdf.pdf_document_from_fz_document(doc.this)
    image = mupdf.pdf_load_object(pdf, xref)
    space = mupdf.pdf_dict_geta(image, mupdf.PDF_ENUM_NAME_ColorSpace, mupdf.PDF_ENUM_NAME_CS)
    kind = mupdf.pdf_array_get(space, 0) if mupdf.pdf_is_array(space) else space
    declared = components_of(doc, xref)
    if mupdf.pdf_to_name(kind) != "ICCBased" or not declared:
        return None
    try:
        return declared, mupdf.fz_colorspace_n(mupdf.pdf_load_colorspace(space))
    except Exception:  # MuPDF raised on its colour space: nothing more to tell
        return None


def _corrupt_flate(fallback: Quarantined, ref: ImageRef) -> Quarantined:
    """An inline Flate image MuPDF padded: when zlib calls its data corrupt before the image's
    samples (and a predictor's tag bytes) are inflated, it did not end early: `undecodable`,
    saying what zlib said, as an image object's corrupt Flate stream is
    (`validation.check_flate_complete`); data that only runs out stays `fallback`."""
    if fallback.reason != "truncated":
        return fallback
    bound = validation.expected_flate_bytes(ref, max(ref.inline.n(), 1), 10)
    try:
        validation.check_flate_complete(inline.raw_bytes(ref), bound)
    except Quarantined as found:
        return found if found.reason == "undecodable" else fallback
    return fallback


def process_image(doc: pymupdf.Document, ref: ImageRef, limits: Limits) -> Processed:
    started = iso(utc_now())
    raw, signature, evidence, notes, said_of_defaults = b"", None, None, "", []
    try:
        defaults = colour_defaults.loaded(doc, ref.defaults, said_of_defaults)
        if ref.inline is not None:
            raw, signature = inline.precheck(ref, limits)
            evidence = raw
            image = _mupdf_decode(doc, 0, ref, defaults)
        else:
            raw, signature = _precheck(doc, ref, limits)
            evidence = raw
            image, notes = _strict_decode(doc, ref, raw, limits, defaults is None)
            image = image or _mupdf_decode(doc, ref.xref, None, defaults)
        if ref.smask:
            stencil = image_entry(doc, ref.xref, "ImageMask")[1] == "true"
            image = normalize.apply_soft_mask(image, _soft_mask(doc, ref, image.size), stencil)
        elif _explicit_mask(doc, ref):
            coverage = _mask_coverage(doc, ref.xref, image.size)
            image = normalize.apply_stencil(image, coverage)
        result = normalize.encode_png(image)
    except Quarantined as bad:
        notes = _joined(notes, said_of_defaults)
        if evidence is None and bad.evidence is not None:  # refused by a check on its stream
            raw = evidence = bad.evidence
        outcome = ImageOutcome(
            **_place(ref), state="quarantined", reason=bad.reason, detail=bad.detail,
            declared_type=_declared(ref), signature=signature, width=ref.width,
            height=ref.height, mode=None, content_hash=None, png_bytes=0, stream_bytes=len(raw),
            started_at=started, finished_at=iso(utc_now()), notes=notes,
        )  # fmt: skip
        return Processed(outcome, evidence)
    notes = _joined(notes, said_of_defaults)
    outcome = ImageOutcome(
        **_place(ref), state="validated", reason=None, detail=None, declared_type=_declared(ref),
        signature=signature, width=result.width, height=result.height, mode=result.mode,
        content_hash=result.sha256, png_bytes=len(result.png), stream_bytes=len(raw),
        started_at=started, finished_at=iso(utc_now()), notes=notes,
    )  # fmt: skip
    return Processed(outcome, result.png)


def _joined(notes: str, more: list[str]) -> str:
    return "; ".join([notes, *more] if notes else more)


def hidden_outcome(ref: ImageRef) -> ImageOutcome:
    """A draw a viewer does not show, left as it is (not read, not decoded): what its
    dictionary declares, and why it is hidden."""
    now = iso(utc_now())
    return ImageOutcome(
        **_place(ref), state="hidden", reason=None, detail=None, declared_type=_declared(ref),
        signature=None, width=ref.width, height=ref.height, mode=None, content_hash=None,
        png_bytes=0, stream_bytes=0, started_at=now, finished_at=now,
    )  # fmt: skip


def _place(ref: ImageRef) -> dict:
    """Where the draw is, on the record from the start: page, index, origin, xref, hidden."""
    return {"page": ref.page, "index": ref.index, "origin": ref.origin, "xref": ref.xref,
            "hidden": ref.hidden}  # fmt: skip


def _declared(ref: ImageRef) -> str:
    return inline.declared_type(ref) if ref.inline is not None else validation.declared_type(ref)

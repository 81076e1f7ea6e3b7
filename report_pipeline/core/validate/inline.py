"""Inline images (`BI … ID … EI`): checked and decoded from MuPDF's parsed image object.

Their bytes live inside a content stream (already bounded by it), so there is no object to
read; the same caps apply before the decode, and MuPDF's warnings about short data quarantine.
"""

from __future__ import annotations

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import ImageRef
from report_pipeline.core.validate import validation

_TYPES = {
    mupdf.FZ_IMAGE_RAW: "raw", mupdf.FZ_IMAGE_FAX: "ccittfax", mupdf.FZ_IMAGE_FLATE: "flate",
    mupdf.FZ_IMAGE_LZW: "lzw", mupdf.FZ_IMAGE_RLD: "runlength", mupdf.FZ_IMAGE_JPEG: "jpeg",
    mupdf.FZ_IMAGE_JPX: "jpx", mupdf.FZ_IMAGE_JBIG2: "jbig2", mupdf.FZ_IMAGE_BROTLI: "brotli",
}  # fmt: skip
# the codecs whose bytes have a structure (and, but for Flate, a header size) to check; an inline
# CCITT image's /Columns is not reachable through MuPDF's bindings: its declared size caps it
_CODECS = {"jpeg": "DCTDecode", "jpx": "JPXDecode", "jbig2": "JBIG2Decode", "flate": "FlateDecode"}


def declared_type(ref: ImageRef) -> str:
    buffer = mupdf.fz_compressed_image_buffer(ref.inline)
    return _TYPES.get(buffer.m_internal.params.type, "unknown") if buffer.m_internal else "raw"


def raw_bytes(ref: ImageRef) -> bytes:
    """The image's bytes as they stand in the content stream, after ASCII filters."""
    buffer = mupdf.fz_compressed_image_buffer(ref.inline)
    if not buffer.m_internal or not buffer.m_internal.buffer:
        return b""
    return mupdf.fz_buffer_extract_copy(
        mupdf.FzBuffer(mupdf.ll_fz_keep_buffer(buffer.m_internal.buffer))
    )


def precheck(ref: ImageRef, limits: Limits) -> tuple[bytes, str | None]:
    """The checks an image object gets, on the inline image's own bytes: size, signature,
    declared size and the size its codestream header states."""
    raw = raw_bytes(ref)
    validation.check_size(len(raw), limits)
    validation.check_dimensions(ref.width, ref.height, limits)
    codec = _CODECS.get(declared_type(ref))
    if codec is None:
        return raw, None
    signature = validation.check_codec(codec, raw)
    validation.check_codestream(raw, (codec,), [""], (ref.width, ref.height), limits)
    return raw, signature


def pixmap(ref: ImageRef) -> pymupdf.Pixmap:
    """MuPDF's decode of the inline image, at its own size."""
    return pymupdf.Pixmap(mupdf.fz_get_unscaled_pixmap_from_image(ref.inline))

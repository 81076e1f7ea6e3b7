"""Inline images (`BI … ID … EI`): checked and decoded from MuPDF's parsed image object.

Their bytes live inside a content stream (already bounded by it), so there is no object to
read; the same caps apply before the decode, and MuPDF's warnings about short data quarantine.
"""

from __future__ import annotations

import re

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.draws.operators import inline_image_texts
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


# the first filter of an inline image's dictionary is ASCII85 (abbreviated or not, alone or first)
_SPACE = rb"[\x00\t\n\x0c\r ]*"
_FIRST_A85 = re.compile(rb"/(?:F|Filter)" + _SPACE + rb"(?:\[" + _SPACE + rb")?"
                        rb"/(?:A85|ASCII85Decode)(?![^\x00\t\n\x0c\r ()<>\[\]{}/%])")  # fmt: skip
_A85_TEXT: dict[tuple[int, str, int], list[bytes]] = {}  # the last page's, by (doc, name, page)


def ascii85_text(doc: pymupdf.Document, ref: ImageRef) -> bytes | None:
    """The ASCII85 text of the inline image `ref` as it stands in its page's content, when it
    can be told: MuPDF decodes that layer while it parses the page and keeps only the bytes it
    made (`raw_bytes`). Found among the page's own inline images whose first filter is ASCII85,
    as the one whose text, up to its first `~` (where MuPDF ends it), makes those bytes; None
    when none does, or another whose text ends elsewhere does too (an image of a form's
    content, or one MuPDF did not read)."""
    if ref.origin != "inline":
        return None
    key = (id(doc), doc.name, ref.page)
    if key not in _A85_TEXT:
        _A85_TEXT.clear()
        content = doc[ref.page - 1].read_contents()
        _A85_TEXT[key] = [data for head, data in inline_image_texts(content)
                          if _FIRST_A85.search(head)]  # fmt: skip
    made = raw_bytes(ref)
    found = [text for text in _A85_TEXT[key] if _makes(text, made)]
    ends = {_ends_early(text) for text in found}
    return found[0] if ends == {True} else None


def _makes(text: bytes, made: bytes) -> bool:
    """Whether ASCII85 `text`, read as MuPDF reads it up to its first `~` (a `<` before it is
    data), makes `made`: its whole groups, then at most the three bytes of a partial one."""
    whole, group, digits = bytearray(), 0, 0
    for char in text.split(b"~", 1)[0]:
        if char in b"\x00\t\n\x0c\r ":
            continue
        if char == 0x7A and not digits:
            whole += bytes(4)
        elif 33 <= char <= 117:
            group, digits = group * 85 + char - 33, digits + 1
            if digits == 5:
                whole += (group & 0xFFFFFFFF).to_bytes(4, "big")
                group = digits = 0
        else:
            break
    return made.startswith(whole) and len(made) - len(whole) <= 3


def _ends_early(text: bytes) -> bool:
    at = text.find(b"~")
    return at >= 0 and text[at + 1 : at + 2] not in (b">", b"")

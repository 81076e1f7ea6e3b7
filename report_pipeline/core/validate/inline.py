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
# the last page's, by (doc, name, page, its own content only)
_A85_TEXT: dict[tuple[int, str, int, bool], list[bytes]] = {}
# the streams a page can run, read for inline images' text: at most so many, so many bytes
_MAX_STREAMS, _MAX_STREAM_BYTES = 4_096, 64 << 20
_RUN = ("XObject", "Pattern", "Font", "ExtGState")  # the resources that hold streams it runs


def ascii85_text(doc: pymupdf.Document, ref: ImageRef) -> bytes | None:
    """The ASCII85 text of the inline image `ref` as it stands in the content that draws it,
    when it can be told: MuPDF decodes that layer while it parses the content and keeps only
    the bytes it made (`raw_bytes`). Found among the inline images whose first filter is ASCII85
    of the page's own content, or for an image a form, pattern, soft mask, Type3 glyph or
    annotation appearance draws (its origin says so), of every stream the page can run
    (`_run_streams`), as the one whose text, up to its first `~` (where MuPDF ends it), makes
    those bytes; None when none does, or another whose text ends elsewhere does too (one MuPDF
    did not read)."""
    if ref.origin.rsplit("/", 1)[-1] != "inline":
        return None
    key = (id(doc), doc.name, ref.page, ref.origin == "inline")
    if key not in _A85_TEXT:
        _A85_TEXT.clear()
        page = doc[ref.page - 1]
        contents = [page.read_contents()]
        if ref.origin != "inline":
            contents += _run_streams(mupdf.pdf_page_from_fz_page(page.this).obj())
        _A85_TEXT[key] = [data for content in contents
                          for head, data in inline_image_texts(content)
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


def _run_streams(page: mupdf.PdfObj) -> list[bytes]:
    """The decoded content of every stream the page can run besides its own content: the
    forms, tiling patterns, soft-mask groups and Type3 glyph procedures its resources name, and
    theirs, and its annotations' normal appearances (each state's), each once; images are not
    read. Bounded: the first `_MAX_STREAMS` streams, up to `_MAX_STREAM_BYTES` in all."""
    found: list[bytes] = []
    seen: set[int] = set()
    todo = [mupdf.pdf_dict_get(page, mupdf.PDF_ENUM_NAME_Resources)]
    annots = mupdf.pdf_dict_get(page, mupdf.PDF_ENUM_NAME_Annots)
    for i in range(mupdf.pdf_array_len(annots) if mupdf.pdf_is_array(annots) else 0):
        look = mupdf.pdf_dict_getl(mupdf.pdf_array_get(annots, i), mupdf.PDF_ENUM_NAME_AP,
                                   mupdf.PDF_ENUM_NAME_N)  # fmt: skip
        todo += [look] if mupdf.pdf_is_stream(look) else _values(look)
    total = 0
    while todo and len(found) < _MAX_STREAMS and total < _MAX_STREAM_BYTES:
        obj = todo.pop()
        number = mupdf.pdf_to_num(obj)
        if not mupdf.pdf_is_dict(obj) or (number and number in seen):
            continue
        seen.add(number)
        if mupdf.pdf_dict_get_name(obj, mupdf.PDF_ENUM_NAME_Subtype) == "Image":
            continue
        if mupdf.pdf_is_stream(obj):
            try:
                data = mupdf.pdf_load_stream(obj).fz_buffer_extract()
            except mupdf.FzErrorBase:
                data = b""
            found.append(data)
            total += len(data)
        resources = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Resources)
        todo.append(resources)
        for kind in _RUN if not mupdf.pdf_is_stream(obj) else ():
            todo += _values(mupdf.pdf_dict_gets(obj, kind))
        todo += _values(mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_CharProcs))  # a Type3 font
        smask = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_SMask)  # an ExtGState's soft mask
        if mupdf.pdf_is_dict(smask):
            todo.append(mupdf.pdf_dict_get(smask, mupdf.PDF_ENUM_NAME_G))
    return found


def _values(obj: mupdf.PdfObj) -> list[mupdf.PdfObj]:
    """A dictionary's values (none for anything else)."""
    if not obj.m_internal or not mupdf.pdf_is_dict(obj):
        return []
    return [mupdf.pdf_dict_get_val(obj, i) for i in range(mupdf.pdf_dict_len(obj))]

"""Validation before archive: size, signature vs declared type, dimensions, pixel cap, full decode.

Every check runs before the next, more expensive one, so a hostile stream is stopped by the
cheapest check that can see it, and nothing is decoded past the pixel cap. Signatures and header
sizes are read by structure (codestream.py), through a bounded prefix of any filter chain
(prefix.py); libmagic only names what mismatched bytes are.
"""

from __future__ import annotations

import io
import re
import zlib

import magic
from PIL import Image

from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import ImageRef, canonical
from report_pipeline.core.validate import codestream, prefix
from report_pipeline.core.validate.quarantine import Quarantined

__all__ = ["Quarantined"]
CODEC_TYPES = {"DCTDecode": "jpeg", "JPXDecode": "jpx", "FlateDecode": "flate"}


def declared_type(ref: ImageRef) -> str:
    if not ref.filters:
        return "raw"
    return CODEC_TYPES.get(ref.filters[-1], ref.filters[-1].removesuffix("Decode").lower())


def check_size(length: int, limits: Limits) -> None:
    if length > limits.max_image_stream_bytes:
        raise Quarantined(
            "stream_too_large",
            f"compressed stream is {length} bytes; limit {limits.max_image_stream_bytes}",
        )


def check_codec(codec: str, data: bytes) -> str | None:
    """The type name when ``data`` is what ``codec`` decodes; None when no exact check exists.
    Bytes a binary codec's signature rejects are `signature_mismatch`, named by libmagic;
    ASCIIHex or ASCII85 data with a character its decoder refuses is `undecodable`: it has no
    signature to mismatch, and MuPDF calls it bad data."""
    try:
        found = codestream.sniff(codec, data)
    except KeyError:
        return None  # CCITT, LZW, RunLength...: no structure to compare against
    if found is None:
        if not data:
            raise Quarantined("truncated", f"declared {codec} but the stream is empty")
        if canonical(codec) in codestream.TEXT_CODECS:  # no magic bytes: bad data, as MuPDF says
            raise Quarantined("undecodable", str(codestream.text_fault(codec, data)))
        named = magic.from_buffer(data[:4096], mime=True)
        raise Quarantined("signature_mismatch", f"declared {codec} but the bytes are {named}")
    return found


def check_codestream(
    raw: bytes, filters: tuple[str, ...], parms: list[str], size: tuple[int, int], limits: Limits
) -> None:
    """Through a bounded prefix of the chain: the last codec's signature, then its header size.

    The size the codestream declares (for CCITT: its /Columns, and its /Rows where MuPDF heeds
    them: `fax_read_size`) must be the dictionary's (``size``) and within the caps.
    """
    if not filters:
        return
    codec = canonical(filters[-1])
    data, complete = raw, True
    if len(filters) > 1:
        data, complete = prefix.decode_prefix(raw, filters[:-1], parms[:-1])
        check_codec(codec, data)
    if codec == "CCITTFaxDecode":
        check_header_size(fax_read_size(parms[-1], size[1]), size, limits)
    if codec not in codestream.SIZES:
        return
    try:
        header = codestream.SIZES[codec](data)
    except Quarantined as short:
        if complete or short.reason != "truncated":
            raise
        raise Quarantined(
            "undecodable", f"no {codec} header in the first {len(data)} bytes"
        ) from None
    check_header_size(header, size, limits)


def fax_read_size(parms: str, height: int) -> tuple[int, int | None]:
    """`fax_size` as MuPDF's fax decoder heeds it for an image `height` rows high: it decodes to
    the data's end-of-block and ignores /Rows, but for data declared without one
    (/EndOfBlock false), which it stops after /Rows rows: more rows than the image's are never
    read. So /Rows disagrees with /Height only there, when it is fewer (MuPDF pads the rest)."""
    columns, rows = fax_size(parms)
    unended = re.search(r"/EndOfBlock\s*false", parms) is not None
    return columns, rows if unended and rows is not None and rows < height else None


def fax_size(parms: str) -> tuple[int, int | None]:
    """CCITT data has no header: its /DecodeParms /Columns (default 1728) and /Rows stand in."""
    return prefix.parm(parms, "Columns", 1728), prefix.parm(parms, "Rows", 0) or None


def check_header_size(
    header: tuple[int, int | None], size: tuple[int, int], limits: Limits
) -> None:
    """The size a codestream states must be the dictionary's ``size``, and within the caps."""
    header = (header[0], header[1] or size[1])  # JPEG DNL, striped JBIG2, no /Rows: height open
    if header != size:
        raise Quarantined(
            "dimension_mismatch", f"header says {header[0]}x{header[1]}, PDF declares "
            f"{size[0]}x{size[1]}",
        )  # fmt: skip
    check_dimensions(*header, limits)


def check_dimensions(width: int, height: int, limits: Limits) -> None:
    if width <= 0 or height <= 0:
        raise Quarantined("bad_dimensions", f"declared size {width}x{height}")
    if width * height > limits.max_image_pixels:
        raise Quarantined(
            "pixel_cap_exceeded",
            f"{width}x{height} = {width * height} pixels; limit {limits.max_image_pixels}",
        )
    if max(width, height) > limits.max_image_side:
        raise Quarantined(
            "dimensions_exceed_cap", f"{width}x{height}: a side exceeds {limits.max_image_side}"
        )


def decode_file_image(raw: bytes, ref: ImageRef, limits: Limits) -> Image.Image:
    """JPEG/JPX: read the header, compare with the declared size, then decode in full.

    Pillow refuses truncated data (LOAD_TRUNCATED_IMAGES stays False): it is quarantined,
    never padded.
    """
    Image.MAX_IMAGE_PIXELS = limits.max_image_pixels
    try:
        image = Image.open(io.BytesIO(raw))
        if image.size != (ref.width, ref.height):
            raise Quarantined(
                "dimension_mismatch",
                f"header says {image.size[0]}x{image.size[1]}, PDF declares "
                f"{ref.width}x{ref.height}",
            )
        check_dimensions(*image.size, limits)
        image.load()
    except Quarantined:
        raise
    except Image.DecompressionBombError as exc:
        raise Quarantined("pixel_cap_exceeded", str(exc)) from None
    except (OSError, SyntaxError, ValueError) as exc:
        reason = "truncated" if "truncated" in str(exc).lower() else "undecodable"
        raise Quarantined(reason, f"{declared_type(ref)} decode failed: {exc}") from None
    return image


_PDF_WHITESPACE = b"\x00\t\n\x0c\r "


def check_flate_complete(raw: bytes, expected: int) -> None:
    """Inflate in 1 MiB pieces that are thrown away (bounded memory); insist on `expected` bytes.
    A wrong Adler-32 after the data is no fault, as MuPDF ignores it (`prefix.inflaters`)."""
    for inflater, data in prefix.inflaters(raw):
        got = 0
        try:
            while got < expected:
                piece = inflater.decompress(data, min(1 << 20, expected - got))
                got += len(piece)
                data = inflater.unconsumed_tail
                if not piece and not data:
                    break
        except zlib.error as exc:
            if prefix.BAD_CHECKSUM in str(exc):
                continue
            raise Quarantined("undecodable", f"flate stream is corrupt: {exc}") from None
        break
    # not cut off: its zlib stream ends, and more follows the end than whitespace and the four
    # bytes of an Adler-32 a raw inflater leaves (a second zlib stream takes at least eight)
    if got < expected and inflater.eof and len(inflater.unused_data.strip(_PDF_WHITESPACE)) > 4:
        raise Quarantined(
            "undecodable",
            f"flate stream ends after {got} of {expected} bytes, and "
            f"{len(inflater.unused_data)} bytes follow its end (not one zlib stream)",
        )
    if got < expected:
        raise Quarantined("truncated", f"flate stream gives {got} of {expected} bytes")


def expected_flate_bytes(ref: ImageRef, components: int, predictor: int) -> int:
    row = (ref.width * components * ref.bpc + 7) // 8
    return ref.height * (row + (1 if predictor >= 10 else 0))

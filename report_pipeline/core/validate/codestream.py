"""What the bytes of an image stream are, and the size their own header declares.

Pure Python, no decoding: signatures are checked by structure where the format has an exact one
(zlib header, JPEG SOI, J2K SOC+SIZ or the JP2 signature box, a JBIG2 segment header, the
ASCIIHex/ASCII85 alphabets and grammar); sizes come from JPEG SOFn, JPX SIZ and the JBIG2 page
information segment; a JPEG's precision and components from its SOFn, and whether it reaches
its EOI marker. Short input raises Quarantined("truncated"), nonsense raises
Quarantined("undecodable").
ASCIIHex and ASCII85 data has no signature, only an alphabet: a character outside it is bad data
(MuPDF: "bad data in ahxd", "bad data in a85d"), whatever the rest is (`text_fault`).
"""

from __future__ import annotations

import re

from report_pipeline.core.pdf.pages import canonical
from report_pipeline.core.validate.quarantine import Quarantined

JP2_SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"
J2K_SOC_SIZ = b"\xff\x4f\xff\x51"
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_STANDALONE = {0x01, *range(0xD0, 0xD8)}
_WHITESPACE = b"\x00\t\n\x0c\r "
_HEX = b"0123456789abcdefABCDEF"
_A85 = bytes(range(33, 118)) + b"z"
TEXT_CODECS = {"ASCIIHexDecode", "ASCII85Decode"}
# what a text codec's bad data is called: the same words for the check on the raw stream and the
# prefix decode (prefix.py), never the character itself (it is the source's)
NOT_HEX = "ASCIIHexDecode data holds a character that is not a hex digit"
NOT_A85 = "ASCII85Decode data holds a character outside its alphabet"
A85_Z_IN_GROUP = "ASCII85Decode data holds a z (four zero bytes) inside a five-character group"
_Z = re.compile(b"z")
JBIG2_TYPES = {0, 4, 6, 7, 16, 20, 22, 23, 36, 38, 39, 40, 42, 43, 48, 49, 50, 51, 52, 53, 62}
JBIG2_REGIONS = {6, 7, 22, 23, 36, 38, 39, 42, 43}


def _be(data: bytes, at: int, size: int, what: str) -> int:
    if at + size > len(data):
        raise Quarantined("truncated", f"{what}: stream ends inside the header")
    return int.from_bytes(data[at : at + size], "big")


def text_fault(codec: str, data: bytes) -> str | None:
    """What is wrong with ASCIIHex or ASCII85 data up to its end mark (`>`; `~`, whether `>`
    follows or not, as MuPDF ends it), as MuPDF's decoder reads it; None when nothing is. Runs
    in C but for one step per `z`, over a stream already within the stream cap."""
    if canonical(codec) == "ASCIIHexDecode":
        body = data.split(b">", 1)[0]
        return NOT_HEX if body.translate(None, _HEX + _WHITESPACE) else None
    body = data.removeprefix(b"<~").split(b"~", 1)[0].translate(None, _WHITESPACE)
    if body.translate(None, _A85):
        return NOT_A85
    digits, after = 0, 0  # a z stands for a whole group: only between groups
    for z in _Z.finditer(body):
        digits, after = digits + z.start() - after, z.end()
        if digits % 5:
            return A85_Z_IN_GROUP
    return None


def _zlib_header(data: bytes) -> bool:
    return (
        len(data) >= 2
        and data[0] & 0x0F == 8
        and data[0] >> 4 <= 7
        and ((data[0] << 8) | data[1]) % 31 == 0
    )


def _jbig2_plausible(data: bytes) -> bool:
    try:
        kind, _, _ = jbig2_segment(data, 0)
    except Quarantined:
        return False
    return kind in JBIG2_TYPES


def sniff(codec: str, data: bytes) -> str | None:
    """The type name when ``data`` has the structure ``codec`` needs, else None.

    Raises KeyError for a codec without an exact structure check (CCITT, LZW, RunLength, raw).
    """
    checks = {
        "DCTDecode": lambda: "image/jpeg" if jpeg_body(data)[:3] == b"\xff\xd8\xff" else None,
        "JPXDecode": lambda: (
            "image/jp2" if data.startswith(JP2_SIGNATURE)
            else "image/x-jp2-codestream" if data.startswith(J2K_SOC_SIZ) else None
        ),
        "FlateDecode": lambda: "application/zlib" if _zlib_header(data) else None,
        "JBIG2Decode": lambda: "image/x-jbig2" if _jbig2_plausible(data) else None,
        "ASCIIHexDecode": lambda: None if text_fault(codec, data) else "text/x-asciihex",
        # MuPDF ends ASCII85 data at its `~`, whether `>` follows or not ("bad eod marker")
        "ASCII85Decode": lambda: None if text_fault(codec, data) else "text/x-ascii85",
    }  # fmt: skip
    return checks[canonical(codec)]()


def jpeg_body(data: bytes) -> bytes:
    """The JPEG as MuPDF's DCT decoder reads it: it skips line feeds, carriage returns and spaces
    before the SOI marker (a stray newline after `stream`), nothing else (a tab, a NUL, a fill
    byte: "Not a JPEG file")."""
    return data.lstrip(b"\n\r ")


def jpeg_size(data: bytes) -> tuple[int, int]:
    """(width, height) from the first SOFn frame header; height 0 (defined by DNL) is kept."""
    data = jpeg_body(data)
    i = _jpeg_sof(data)
    return _be(data, i + 5, 2, "JPEG SOF"), _be(data, i + 3, 2, "JPEG SOF")


def jpeg_frame(data: bytes) -> tuple[int, int]:
    """(sample precision in bits, colour components) from the first SOFn frame header."""
    data = jpeg_body(data)
    i = _jpeg_sof(data)
    return _be(data, i + 2, 1, "JPEG SOF"), _be(data, i + 7, 1, "JPEG SOF")


def jpeg_reaches_eoi(data: bytes) -> bool:
    """Whether the JPEG goes on to its EOI marker: segments are skipped by their lengths (an
    EXIF thumbnail's own EOI is not the stream's), scan data is searched for the next marker
    (FF00 is a stuffed byte, RSTn belongs to the scan). Pure Python, one pass, no decoding."""
    data = jpeg_body(data)
    i = 2
    while True:
        i = data.find(b"\xff", i)
        while 0 <= i < len(data) and data[i] == 0xFF:
            i += 1  # a marker may be preceded by any number of fill bytes
        if i < 0 or i >= len(data):
            return False
        marker, i = data[i], i + 1
        if marker == 0xD9:
            return True
        if marker and marker not in _STANDALONE:
            if i + 2 > len(data):
                return False
            i += int.from_bytes(data[i : i + 2], "big")  # the segment; an SOS's scan follows


def _jpeg_sof(data: bytes) -> int:
    """The offset of the first SOFn segment's length field."""
    i = 2
    while True:
        while i < len(data) and data[i] != 0xFF:  # libjpeg skips extraneous bytes too
            i += 1
        while i < len(data) and data[i] == 0xFF:
            i += 1
        marker = _be(data, i, 1, "JPEG marker")
        i += 1
        if marker in _STANDALONE:
            continue
        if marker in {0xD9, 0xDA}:
            raise Quarantined("undecodable", "JPEG has no frame header (SOF) before its scan")
        length = _be(data, i, 2, "JPEG segment")
        if marker in _SOF:
            return i
        if length < 2:
            raise Quarantined("undecodable", f"JPEG segment length {length}")
        i += length


def _siz(data: bytes, at: int) -> tuple[int, int]:
    if len(data) < at + 4:
        raise Quarantined("truncated", "JPX stream ends before its SIZ marker")
    if data[at : at + 4] != J2K_SOC_SIZ:
        raise Quarantined("undecodable", "JPX codestream does not start with SOC and SIZ")
    x, y, x0, y0 = (_be(data, at + 8 + 4 * k, 4, "JPX SIZ") for k in range(4))
    return x - x0, y - y0


def jpx_size(data: bytes) -> tuple[int, int]:
    """(width, height) of the image area from SIZ, in a raw codestream or JP2's jp2c box."""
    if not data.startswith(JP2_SIGNATURE):
        return _siz(data, 0)
    i = 0
    while i + 8 <= len(data):
        length, kind, header = _be(data, i, 4, "JP2 box"), data[i + 4 : i + 8], 8
        if length == 1:
            length, header = _be(data, i + 8, 8, "JP2 box"), 16
        elif length == 0:
            length = len(data) - i
        if length < header:
            raise Quarantined("undecodable", f"JP2 box {kind!r} has length {length}")
        if kind == b"jp2c":
            return _siz(data, i + header)
        i += length
    raise Quarantined("truncated", "JP2 file ends before its codestream (jp2c) box")


def jbig2_segment(data: bytes, i: int) -> tuple[int, int, int]:
    """(type, data offset, data length) of the segment header at ``i`` (embedded stream)."""
    number, flags = _be(data, i, 4, "JBIG2 segment"), _be(data, i + 4, 1, "JBIG2 segment")
    count, j = _be(data, i + 5, 1, "JBIG2 segment") >> 5, i + 6
    if count == 7:
        count = _be(data, i + 5, 4, "JBIG2 segment") & 0x1FFFFFFF
        j = i + 9 + (count + 8) // 8
    elif count > 4:
        raise Quarantined("undecodable", f"JBIG2 referred-to segment count {count}")
    j += count * (1 if number <= 256 else 2 if number <= 65536 else 4)
    j += 4 if flags & 0x40 else 1
    kind = flags & 0x3F
    if kind not in JBIG2_TYPES:
        raise Quarantined("undecodable", f"JBIG2 segment type {kind}")
    return kind, j + 4, _be(data, j, 4, "JBIG2 segment")


def jbig2_size(data: bytes) -> tuple[int, int | None]:
    """(width, height) from the page information segment; height None when striped/unknown.

    Every region segment before that page's end must fit in the page.
    """
    i, page = 0, None
    while i < len(data):
        kind, start, length = jbig2_segment(data, i)
        if kind == 48:
            width, height = _be(data, start, 4, "JBIG2 page"), _be(data, start + 4, 4, "JBIG2 page")
            page = (width, None if height == 0xFFFFFFFF else height)
        elif kind in JBIG2_REGIONS and page:
            _check_region(data, start, page)
        if kind in {49, 51} or length == 0xFFFFFFFF:
            break
        i = start + length
    if page is None:
        raise Quarantined("undecodable", "JBIG2 stream has no page information segment")
    return page


def _check_region(data: bytes, start: int, page: tuple[int, int | None]) -> None:
    width, height = _be(data, start, 4, "JBIG2 region"), _be(data, start + 4, 4, "JBIG2 region")
    if width > page[0] or (page[1] is not None and height > page[1]):
        raise Quarantined(
            "dimension_mismatch", f"JBIG2 region {width}x{height} exceeds its page {page}"
        )


def jbig2_global_sizes(data: bytes) -> list[tuple[int, int]]:
    """The sizes a /JBIG2Globals stream states: of any page information (48) or region segment
    in it. MuPDF allocates them as it reads the globals, so they meet the caps too (a striped
    height, 0xFFFFFFFF, counts as 0).

    Read as jbig2dec, MuPDF's decoder, reads them, never stopping before it does: a header or
    data that runs past the end is where it stops (it waits for more, and none comes: bytes
    that are no segment at all, 32 bytes of DEADBEEF, are ignored and the image decodes); a
    referred-to segment count of 5 or 6 is read as any other; a segment type it does not know
    is skipped, and reading goes on (it warns, and reads on). Nothing here refuses the image:
    only a stated size over the caps does."""
    i, sizes = 0, []
    while True:
        header = _jbig2dec_header(data, i)
        if header is None:
            break
        kind, start, length = header
        if (kind == 48 or kind in JBIG2_REGIONS) and start + 8 <= len(data):
            width, height = _be(data, start, 4, "JBIG2 size"), _be(data, start + 4, 4, "JBIG2 size")
            sizes.append((width, 0 if height == 0xFFFFFFFF else height))
        if length == 0xFFFFFFFF or start + length > len(data):
            break
        i = start + length
    return sizes


def _jbig2dec_header(data: bytes, i: int) -> tuple[int, int, int] | None:
    """(type, data offset, data length) of the segment header at `i` as jbig2dec parses it
    (any type, any short referred-to count), or None when the header runs past the end."""
    if i + 11 > len(data):
        return None
    number, flags, count = int.from_bytes(data[i : i + 4], "big"), data[i + 4], data[i + 5] >> 5
    j = i + 6
    if count == 7:
        count = int.from_bytes(data[i + 5 : i + 9], "big") & 0x1FFFFFFF
        j = i + 9 + (count + 8) // 8
    j += count * (1 if number <= 256 else 2 if number <= 65536 else 4)
    j += 4 if flags & 0x40 else 1
    if j + 4 > len(data):
        return None
    return flags & 0x3F, j + 4, int.from_bytes(data[j : j + 4], "big")


SIZES = {"DCTDecode": jpeg_size, "JPXDecode": jpx_size, "JBIG2Decode": jbig2_size}

"""Decode a bounded prefix of a PDF filter chain in pure Python, to read the header behind it.

Only the pre-filters (FlateDecode, ASCIIHexDecode, ASCII85Decode, LZWDecode with EarlyChange,
RunLengthDecode) are decoded, and never more than ``limit`` bytes out of each, so a stream that
inflates to gigabytes costs at most ``limit`` bytes here. A filter's PNG or TIFF predictor is undone
on that prefix (predictor.py). Corrupt input raises Quarantined.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

from report_pipeline.core.pdf.pages import canonical
from report_pipeline.core.validate import predictor
from report_pipeline.core.validate.codestream import A85_Z_IN_GROUP, NOT_A85, NOT_HEX
from report_pipeline.core.validate.quarantine import Quarantined

PREFIX_LIMIT = 256 * 1024
_WHITESPACE = b"\x00\t\n\x0c\r "
PREDICTED = {"FlateDecode", "LZWDecode"}  # the filters a /Predictor applies to


def parm(parms: str, key: str, default: int) -> int:
    match = re.search(rf"/{key}\s+(-?\d+)", parms)
    return int(match.group(1)) if match else default


# zlib's word for a wrong Adler-32 after the data: MuPDF ignores it ("ignoring zlib error")
BAD_CHECKSUM = "incorrect data check"


def inflaters(data: bytes):
    """(inflater, data) to inflate `data` with: zlib's, then, for data whose only fault is its
    Adler-32 (zlib stopped at it), a raw inflater past its two-byte header, which checks none."""
    yield zlib.decompressobj(), data
    yield zlib.decompressobj(-zlib.MAX_WBITS), data[2:]


def flate(data: bytes, limit: int, parms: str) -> tuple[bytes, bool]:
    for inflater, body in inflaters(data):
        try:
            out = inflater.decompress(body, limit)
        except zlib.error as exc:
            if BAD_CHECKSUM in str(exc):
                continue
            raise Quarantined("undecodable", f"FlateDecode: {exc}") from None
        return out, not inflater.unconsumed_tail
    raise AssertionError("a raw inflater checks no Adler-32")  # pragma: no cover


def ascii_hex(data: bytes, limit: int, parms: str) -> tuple[bytes, bool]:
    digits = data.split(b">", 1)[0].translate(None, _WHITESPACE)
    complete = len(digits) <= 2 * limit
    digits = digits[: 2 * limit]
    try:
        return bytes.fromhex((digits + b"0" * (len(digits) % 2)).decode("ascii")), complete
    except (UnicodeDecodeError, ValueError):
        raise Quarantined("undecodable", NOT_HEX) from None


def ascii85(data: bytes, limit: int, parms: str) -> tuple[bytes, bool]:
    # the data ends at `~`, as MuPDF ends it, whether `>` follows or not
    text = data.removeprefix(b"<~").split(b"~", 1)[0].translate(None, _WHITESPACE)
    out, group, digits = bytearray(), 0, 0
    for char in text:
        if char == 0x7A and not digits:
            out += bytes(4)
        elif 33 <= char <= 117:
            group, digits = group * 85 + char - 33, digits + 1
            if digits == 5:
                out += _a85_word(group, 4)
                group = digits = 0
        else:
            raise Quarantined("undecodable", A85_Z_IN_GROUP if char == 0x7A else NOT_A85)
        if len(out) >= limit:
            return bytes(out[:limit]), False
    return bytes(out + _a85_tail(group, digits)), True


def _a85_word(group: int, size: int) -> bytes:
    if group > 0xFFFFFFFF:
        raise Quarantined("undecodable", "ASCII85Decode: a group exceeds 2**32")
    return group.to_bytes(4, "big")[:size]


def _a85_tail(group: int, digits: int) -> bytes:
    if digits == 1:
        raise Quarantined("undecodable", "ASCII85Decode: a final group of one character")
    if not digits:
        return b""
    return _a85_word(group * 85 ** (5 - digits) + 85 ** (5 - digits) - 1, digits - 1)


def run_length(data: bytes, limit: int, parms: str) -> tuple[bytes, bool]:
    out, i = bytearray(), 0
    while i < len(data) and len(out) < limit:
        length = data[i]
        if length == 128:
            break
        if length < 128:
            out += data[i + 1 : i + 2 + length]
            i += length + 2
        else:
            out += data[i + 1 : i + 2] * (257 - length)
            i += 2
    return bytes(out[:limit]), len(out) < limit


def lzw(data: bytes, limit: int, parms: str) -> tuple[bytes, bool]:
    early = parm(parms, "EarlyChange", 1)
    out, table, width, previous = bytearray(), _lzw_table(), 9, b""
    acc = bits = 0
    for byte in data:
        acc, bits = (acc << 8) | byte, bits + 8
        while bits >= width:
            bits -= width
            code, acc = acc >> bits, acc & ((1 << bits) - 1)
            if code == 257:
                return bytes(out[:limit]), True
            if code == 256:
                table, width, previous = _lzw_table(), 9, b""
                continue
            entry = _lzw_entry(table, code, previous)
            if previous and len(table) < 4096:
                table.append(previous + entry[:1])
            out += entry
            previous = entry
            if len(out) >= limit:
                return bytes(out[:limit]), False
            width = min(12, width + (len(table) + early >= 1 << width))
    return bytes(out), True


def _lzw_table() -> list[bytes]:
    return [bytes([i]) for i in range(256)] + [b"", b""]


def _lzw_entry(table: list[bytes], code: int, previous: bytes) -> bytes:
    if code < len(table) and code not in (256, 257):
        return table[code]
    if code == len(table) and previous:
        return previous + previous[:1]
    raise Quarantined("undecodable", f"LZWDecode: code {code} is not in the table")


DECODERS = {
    "FlateDecode": flate, "ASCIIHexDecode": ascii_hex, "ASCII85Decode": ascii85,
    "LZWDecode": lzw, "RunLengthDecode": run_length,
}  # fmt: skip


def decode_prefix(
    data: bytes, filters: Sequence[str], parms: Sequence[str], limit: int = PREFIX_LIMIT
) -> tuple[bytes, bool]:
    """(up to ``limit`` decoded bytes, whether that is the whole output of the chain)."""
    complete = True
    for name, parms_of_filter in zip(filters, parms, strict=True):
        decoder = DECODERS.get(canonical(name))
        if decoder is None:
            raise Quarantined("undecodable", f"{name} cannot be decoded before another filter")
        data, done = decoder(data, limit, parms_of_filter)
        if canonical(name) in PREDICTED:
            geometry = (parm(parms_of_filter, key, default) for key, default in predictor.KEYS)
            data = predictor.undo(data, *geometry)
        complete = complete and done
    return data, complete

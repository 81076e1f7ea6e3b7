"""Why MuPDF could not decode an image stream in full: the reason its quarantine gives.

MuPDF pads whatever a decoder does not deliver ("padding truncated image"), so its warning alone
would call every failure `truncated`. A JPEG's own structure tells more, without decoding it
(codestream.py):
- MuPDF's libjpeg reads 8-bit samples only: any other precision is `unsupported_precision`;
- fewer components than the declared colour space takes leave MuPDF short of samples:
  `colorspace_mismatch` (more components are read as the page draws them, and never padded);
  so does a /BitsPerComponent above the JPEG's 8 bits (16: MuPDF reads its samples in pairs),
  where a smaller one is drawn as MuPDF reads the bytes, and never padded;
- a JPEG that reaches its EOI marker did not end early, so its data is at fault: `undecodable`,
  with what libjpeg said.
A JBIG2 or CCITT fax stream decodes to one component of 1 bit a pixel, whatever the dictionary
declares: a colour space or depth that takes more (a JBIG2 image declared /DeviceRGB with 8 bits
a component) leaves MuPDF short of samples however complete the stream is:
`colorspace_mismatch` (`bilevel`). A fax stream MuPDF's decoder calls malformed before it pads
("format error: overflow in 2d faxd": G3 data declared /K 4, or G4 data declared
/EncodedByteAlign) did not end early either: `undecodable`, with what MuPDF said (`malformed`).
A Flate or LZW stream whose predictor's rows (its /DecodeParms' /Colors, /BitsPerComponent and
/Columns) are shorter than the image's leaves MuPDF short of samples however complete it is:
`undecodable`, naming both row sizes (`predictor_rows`).
An /ICCBased image whose profile MuPDF cannot use (junk, or not of its /Alternate's kind, or of
another /N) is drawn in its /Alternate: when that takes more components than /N declares and the
stream holds every sample /N makes, the stream did not end early, the colour space MuPDF drew
it in wants more: `colorspace_mismatch`, naming both counts (`alternate`).
ASCIIHex or ASCII85 data MuPDF calls bad ("bad data in ahxd", "bad data in a85d") is
`undecodable` however far it runs (`bad_text`); the precheck finds it in a stream of its own.
Only a JPEG that ends before its EOI, and a short stream of any other codec, stays `truncated`.
"""

from __future__ import annotations

import re

from report_pipeline.core.validate import codestream
from report_pipeline.core.validate.codestream import NOT_HEX
from report_pipeline.core.validate.predictor import KEYS, PNG, TIFF
from report_pipeline.core.validate.prefix import parm
from report_pipeline.core.validate.quarantine import Quarantined

_LIBJPEG_SAID = re.compile(r"jpeg error: ([^\n]{1,120})")


def explain(
    fallback: Quarantined,
    jpeg: bytes | None,
    whole: bool,
    declared: int | None,
    said: str,
    depth: int = 8,
) -> Quarantined:
    """What to quarantine an image MuPDF padded (`fallback` is then `truncated`) or could not
    decode at all (`undecodable`) for, when its JPEG says more than `fallback`.

    `jpeg`: the stream's JPEG bytes when its last filter is DCTDecode (None otherwise), `whole`
    when they are all of it (not a bounded prefix of a filter chain); `declared`: the components
    of the declared colour space, None when unknown; `said`: MuPDF's warnings; `depth`: the
    declared /BitsPerComponent (MuPDF reads the JPEG's 8-bit samples at that depth: 16 takes
    twice the bytes the JPEG gives, however complete it is)."""
    if jpeg is None:
        return fallback
    try:
        precision, components = codestream.jpeg_frame(jpeg)
    except Quarantined:
        return fallback  # no frame header: nothing to tell
    if precision != 8:
        return Quarantined(
            "unsupported_precision",
            f"a {precision}-bit JPEG: MuPDF decodes JPEG samples of 8 bits only",
        )
    if (
        fallback.reason == "truncated"
        and depth > precision
        and (not declared or components >= declared)
    ):
        return Quarantined(
            "colorspace_mismatch",
            f"the JPEG's samples are of {precision} bits; its declared /BitsPerComponent "
            f"{depth} takes more than it holds",
        )
    if declared and components < declared:
        return Quarantined(
            "colorspace_mismatch",
            f"the JPEG has {components} colour component{'s' * (components != 1)}, its "
            f"declared colour space takes {declared}",
        )
    if fallback.reason == "truncated" and whole and codestream.jpeg_reaches_eoi(jpeg):
        found = _LIBJPEG_SAID.search(said)
        why = f": {found.group(1)}" if found else ""
        return Quarantined(
            "undecodable", f"the JPEG is complete (it reaches EOI) but does not decode{why}"
        )
    return fallback


BILEVEL = {"JBIG2Decode": "JBIG2", "CCITTFaxDecode": "CCITT fax"}  # one 1-bit component a pixel


def bilevel(fallback: Quarantined, codec: str, declared: int | None, bpc: int) -> Quarantined:
    """What to quarantine an image MuPDF padded for, when its codec (`codec`, the last filter)
    is one that decodes to one 1-bit component a pixel and the dictionary declares more:
    `declared` components (None when unknown, or a stencil mask) of `bpc` bits."""
    if fallback.reason != "truncated" or codec not in BILEVEL or not declared or bpc < 1:
        return fallback
    if declared * bpc <= 1:
        return fallback
    components = f"{declared} colour component{'s' * (declared != 1)}"
    return Quarantined(
        "colorspace_mismatch",
        f"{BILEVEL[codec]} decodes to one 1-bit component a pixel; its declared colour space "
        f"and /BitsPerComponent take {components} of {bpc} bits",
    )


def malformed(fallback: Quarantined, said: str) -> Quarantined:
    """`undecodable` for a stream MuPDF padded after its decoder called the data malformed
    (a "format error"), which a stream that only ends early never draws; else `fallback`."""
    if fallback.reason != "truncated":
        return fallback
    for line in said.splitlines():
        if line.lower().startswith("format error"):
            return Quarantined("undecodable", f"MuPDF could not decode it: {line.strip()[:200]}")
    return fallback


def predictor_rows(
    fallback: Quarantined, parms: str, components: int | None, bpc: int, width: int
) -> Quarantined:
    """`undecodable` for an image MuPDF padded whose Flate/LZW predictor (`parms`, the last
    filter's /DecodeParms) makes rows shorter than the image's `width` pixels of `components`
    components of `bpc` bits: its rows come out short, so the samples do, whether or not the
    stream ends early. Else `fallback`."""
    predictor = parm(parms, "Predictor", 1)
    if fallback.reason != "truncated" or (predictor != TIFF and predictor not in PNG):
        return fallback
    if not components or bpc < 1 or width < 1:
        return fallback
    colors, depth, columns = (parm(parms, key, default) for key, default in KEYS[1:])
    theirs, ours = (colors * depth * columns + 7) // 8, (components * bpc * width + 7) // 8
    if theirs >= ours:
        return fallback
    return Quarantined(
        "undecodable",
        f"its predictor's rows (/Colors {colors} /BitsPerComponent {depth} /Columns {columns}) "
        f"hold {theirs} bytes, the image's {ours}: its parameters disagree",
    )


def alternate(fallback: Quarantined, declared: int | None, used: int, whole: bool) -> Quarantined:
    """`colorspace_mismatch` for an /ICCBased image MuPDF padded when it drew it in a colour
    space of `used` components, its /Alternate, where /N declares `declared` (None when unknown)
    and the stream holds every sample of `declared` components (`whole`). Else `fallback`."""
    if fallback.reason != "truncated" or not declared or used <= declared or not whole:
        return fallback
    return Quarantined(
        "colorspace_mismatch",
        f"its /ICCBased colour space declares {declared} colour component"
        f"{'s' * (declared != 1)} (/N {declared}) and the stream holds them all; MuPDF cannot "
        f"use its ICC profile and draws it in its /Alternate, which takes {used}",
    )


_BAD_TEXT = {
    "bad data in ahxd": NOT_HEX,
    "bad data in a85d": "ASCII85Decode data holds a character outside its alphabet or a z "
    "inside a five-character group",
}


def early_end(fallback: Quarantined, data: bytes) -> Quarantined:
    """`undecodable` for an image MuPDF padded because its ASCII85 data (`data`, the raw
    stream) holds a `~` that is not its end marker `~>` before more data: MuPDF's decoder ends
    the data at the `~` ("bad eod marker"), short of the image's samples, though the stream goes
    on. PostScript's `<~` opening is one: MuPDF reads its `<` as data. Else `fallback`."""
    at = data.find(b"~")
    if fallback.reason != "truncated" or at < 0 or data[at + 1 : at + 2] in (b">", b""):
        return fallback
    opening = " (it opens with PostScript's <~, whose < MuPDF reads as data)"
    return Quarantined(
        "undecodable",
        "ASCII85Decode data holds a ~ that is not its end marker ~> before more data"
        f"{opening if data.lstrip().startswith(b'<~') else ''}: MuPDF ends the data there, "
        "short of the image's samples",
    )


def bad_text(fallback: Quarantined, said: str) -> Quarantined:
    """`undecodable` for an image MuPDF padded after its ASCIIHex or ASCII85 decoder met bad
    data (said in `said` with the character, which stays out of the detail); else
    `fallback`."""
    if fallback.reason != "truncated":
        return fallback
    for words, detail in _BAD_TEXT.items():
        if words in said.lower():
            return Quarantined("undecodable", detail)
    return fallback

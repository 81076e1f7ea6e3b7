"""Classes from the twelfth crafted round (issue 30), each against MuPDF: Flate data whose only
fault is a wrong Adler-32 checksum after it is drawn whole, as MuPDF draws it ("ignoring zlib
error: incorrect data check"). (Clip text and the patterns that paint it are in
test_clip_nesting.py.)"""

from __future__ import annotations

import io
import zlib

import pymupdf
import pytest
from PIL import Image

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.validate import per_image, prefix, validation
from report_pipeline.core.validate.quarantine import Quarantined

SAMPLES = bytes(range(0, 256, 4))  # an 8x8 gray image


def _bad_checksum(data: bytes) -> bytes:
    """`data` Flate compressed, its Adler-32 wrong."""
    packed = zlib.compress(data)
    return packed[:-4] + bytes(b ^ 0xFF for b in packed[-4:])


def _jpeg() -> bytes:
    out = io.BytesIO()
    Image.frombytes("L", (8, 8), SAMPLES).save(out, "JPEG", quality=95)
    return out.getvalue()


def test_a_wrong_adler32_is_no_fault_of_the_data():
    rows = bytes(range(256)) * 4096  # more than one inflate piece
    validation.check_flate_complete(_bad_checksum(rows), len(rows))
    assert prefix.flate(_bad_checksum(rows), 100, "") == (rows[:100], False)
    assert prefix.flate(_bad_checksum(SAMPLES), 1000, "") == (SAMPLES, True)
    with pytest.raises(Quarantined, match="truncated"):  # short data stays short
        validation.check_flate_complete(_bad_checksum(rows[:1000]), len(rows))
    with pytest.raises(Quarantined, match="undecodable"):  # a corrupt body stays corrupt
        validation.check_flate_complete(b"\x78\x9c garbage", 100)


@pytest.mark.parametrize("kind", ["image", "flate over dct", "inline"])
def test_flate_data_with_a_wrong_adler32_is_archived_as_mupdf_draws_it(kind):
    """MuPDF warns "ignoring zlib error: incorrect data check" and draws every sample; the
    image was quarantined `undecodable` ("flate stream is corrupt: ... incorrect data check")."""
    o = Objects()
    if kind == "inline":
        o.page(b"<<>>", b"q 10 0 0 10 0 0 cm BI /W 8 /H 8 /CS /G /BPC 8 /F /Fl ID %s EI Q"
               % _bad_checksum(SAMPLES))  # fmt: skip
    else:
        data, chain = (SAMPLES, b"/FlateDecode") if kind == "image" else (
            _jpeg(), b"[/FlateDecode/DCTDecode]")  # fmt: skip
        head = b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceGray"
        drawn = o.add(stream(head + b"/BitsPerComponent 8/Filter" + chain, _bad_checksum(data)))
        o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        processed = per_image.process_image(doc, ref, Limits())
        assert processed.outcome.state == "validated", processed.outcome
        drawn_by_mupdf = SAMPLES if kind == "inline" else pymupdf.Pixmap(doc, ref.xref).samples
    archived = Image.open(io.BytesIO(processed.payload))
    assert archived.mode == "L" and archived.tobytes() == drawn_by_mupdf

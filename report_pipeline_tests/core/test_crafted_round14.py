"""Classes from the fourteenth crafted round (issue 30), each against MuPDF's page render: an
image whose decode has an alpha of its own (a colour-key /Mask) drawn under a default colour
space, which MuPDF's draw device converts with its alpha kept (clipping colours out of the
profile's gamut otherwise than a conversion without it)."""

from __future__ import annotations

import io

import numpy as np
import pymupdf
import pytest
from PIL import Image

from fixtures import _icc
from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.slow

SIDE = 8
RGB = np.random.default_rng(14).integers(0, 256, SIDE * SIDE * 3, dtype=np.uint8).tobytes()


def test_a_colour_keyed_image_under_a_default_is_converted_as_the_page_draws_it(tmp_path):
    """Under an ICC /DefaultRGB, MuPDF converts the keyed image's samples with their alpha: out
    of the profile's gamut a channel comes out up to 8 levels off a conversion without it,
    which the archive made (the page, rendered one pixel a sample, is the reference)."""
    built = Objects()
    icc = built.add(stream(b"/N 3", _icc.rgb_profile()))
    drawn = built.add(stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceRGB"
                             b"/BitsPerComponent 8/Mask[0 60 0 255 0 255]", RGB))  # fmt: skip
    built.page(b"<</ColorSpace<</DefaultRGB[/ICCBased %d 0 R]>>/XObject<</I %d 0 R>>>>"
               % (icc, drawn), b"q 8 0 0 8 0 0 cm /I Do Q")  # fmt: skip
    path = tmp_path / "keyed.pdf"
    path.write_bytes(built.pdf())
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived", child
    archived = Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24)))
    assert archived.mode == "RGBA"
    alpha = np.asarray(archived.getchannel("A"), int)
    assert 0 < (alpha == 0).sum() < SIDE * SIDE  # some samples keyed out, not all
    with pymupdf.open(path) as doc:
        pix = doc[0].get_pixmap(clip=pymupdf.Rect(0, 200 - SIDE, SIDE, 200))
    rendered = np.frombuffer(pix.samples, np.uint8).reshape(SIDE, SIDE, pix.n)[..., :3].astype(int)
    over_white = Image.new("RGB", archived.size, (255, 255, 255))
    over_white.paste(archived.convert("RGB"), mask=archived.getchannel("A"))
    assert np.abs(np.asarray(over_white, int) - rendered).max() <= 1

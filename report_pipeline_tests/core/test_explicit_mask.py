"""An explicit stencil /Mask is applied at its own resolution (crafted round 9): MuPDF was asked
for it at the identity matrix, one unit, and decoded it subsampled, so an 8 x 8 mask came back
as 2 x 2 blocks averaged and a 256 x 256 one as a flat 128: the archived alpha blurred or lost
the mask the page draws through."""

from __future__ import annotations

import io

import numpy as np
import pymupdf
import pytest
from PIL import Image

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("side", [8, 256])
def test_an_explicit_mask_is_the_alpha_at_full_resolution(tmp_path, side):
    checker = (np.indices((side, side)).sum(0) // max(1, side // 8)) % 2  # 8 x 8 squares
    bits = np.packbits(checker.astype(np.uint8), axis=1).tobytes()
    objects = Objects()
    mask = objects.add(stream(b"/Type/XObject/Subtype/Image/Width %d/Height %d/ImageMask true"
                              b"/BitsPerComponent 1" % (side, side), bits))  # fmt: skip
    rgb = bytes((k * 7) % 256 for k in range(side * side * 3))
    drawn = objects.add(stream(b"/Type/XObject/Subtype/Image/Width %d/Height %d/ColorSpace"
                               b"/DeviceRGB/BitsPerComponent 8/Mask %d 0 R" % (side, side, mask),
                               rgb))  # fmt: skip
    objects.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    path = tmp_path / "mask.pdf"
    path.write_bytes(objects.pdf())
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, path, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    archived = Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24)))
    assert archived.mode == "RGBA" and archived.size == (side, side)
    alpha = np.asarray(archived)[..., 3]
    with pymupdf.open(path) as doc:  # the page as MuPDF draws it: painted where 0 is drawn
        pix = pymupdf.Pixmap(doc, mask)
        painted = np.frombuffer(pix.samples, np.uint8)[pix.n - 1 :: pix.n].reshape(side, side)
    assert set(np.unique(alpha)) == {0, 255}
    assert np.array_equal(alpha, np.where(painted == 0, 255, 0)) or np.array_equal(
        alpha, np.where(painted == 0, 0, 255)
    )
    assert np.array_equal(alpha == 255, checker == 0) or np.array_equal(alpha == 255, checker == 1)

"""A 4:2:0 JPEG in plain /DeviceRGB is archived with its chroma upsampled as MuPDF's renderer
does it (IJG libjpeg), not as Pillow's libjpeg-turbo (and poppler: `pdfimages -png`) does: the
JPEG standard leaves upsampling to the decoder, and the two differ by about a level on average,
tens at sharp colour edges (docs/operate.md, "full decode"). 4:4:4 has nothing to upsample: all
decode it alike (within IDCT rounding)."""

from __future__ import annotations

import io
import subprocess

import numpy as np
import pymupdf
import pytest
from PIL import Image

from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.core.test_image_classes import mupdf_pixels

pytestmark = pytest.mark.slow


def photo_pdf(path, subsampling: int) -> None:
    """A noisy photo-like JPEG with a sharp red block, drawn once on its page, in /DeviceRGB
    (PyMuPDF writes an sRGB /ICCBased space, which MuPDF decodes anyway)."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:120, 0:160]
    pixels = np.stack([(x * 1.6) % 256, (y * 2.0) % 256, (x + y) * 0.8 % 256], -1)
    pixels[30:90, 50:110] = [220, 30, 40]
    pixels = np.clip(pixels + rng.normal(0, 12, pixels.shape), 0, 255).astype(np.uint8)
    jpeg = io.BytesIO()
    Image.fromarray(pixels).save(jpeg, "JPEG", quality=85, subsampling=subsampling)
    doc = pymupdf.open()
    page = doc.new_page(width=160, height=120)
    page.insert_image(page.rect, stream=jpeg.getvalue())
    doc.xref_set_key(page.get_images()[0][0], "ColorSpace", "/DeviceRGB")
    doc.save(path)


@pytest.mark.parametrize("subsampling", [2, 0], ids=["4:2:0", "4:4:4"])
def test_jpeg_chroma_is_upsampled_as_mupdf_draws_it(tmp_path, subsampling):
    pdf = tmp_path / "photo.pdf"
    photo_pdf(pdf, subsampling)
    store = LocalStore(tmp_path / "store")
    manifest = run_report(store, pdf, PipelineSettings(tmp_path / "work"), "inbox", "2026-10")
    (child,) = manifest.children
    assert child.state == "archived"
    ours = np.asarray(Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 24))), int)
    doc = pymupdf.open(pdf)
    mupdf = np.asarray(mupdf_pixels(doc, doc.get_page_images(0)[0][0]), int)
    # 4:4:4 stays on Pillow's decode: the two IDCTs round a sample apart at most
    assert np.abs(ours - mupdf).max() <= (1 if subsampling == 0 else 0)
    subprocess.run(["pdfimages", "-png", str(pdf), str(tmp_path / "pp")], check=True)
    poppler = np.asarray(Image.open(tmp_path / "pp-000.png").convert("RGB"), int)
    off = np.abs(ours - poppler)
    if subsampling == 0:
        assert off.max() <= 1  # nothing to upsample (IDCT rounding at most)
    else:
        assert 0 < off.mean() < 2 and off.max() > 8  # alike on average, apart at colour edges

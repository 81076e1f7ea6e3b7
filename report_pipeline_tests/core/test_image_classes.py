"""Every image class third-party PDFs use is archived with MuPDF's pixels; forged headers are not.

image_classes.pdf has one page per class (fixtures/_classes.py CLASSES order), hostile_images.pdf
one page per forged header (fixtures/_hostile.py). Both run through the core pipeline once (the
session's one run of each, conftest.shared_run, which the oracle reads too).
"""

import io

import pymupdf
import pytest
from PIL import Image

from fixtures import _classes, _hostile
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import fixture_pdf

CLASSES = list(_classes.CLASSES)
STENCILS = ["ccitt_g4_stencil", "jbig2", "jbig2_globals", "stencil_decode_inverted"]


def run_once(shared_run, name: str) -> tuple[LocalStore, Manifest]:
    """`name` run through the core pipeline once for the session: its store (read only here)
    and its manifest."""
    folder, manifest = shared_run(name)
    return LocalStore(folder), manifest


@pytest.fixture(scope="module")
def classes_run(shared_run):
    return run_once(shared_run, "image_classes.pdf")


@pytest.fixture(scope="module")
def hostile_run(shared_run):
    return run_once(shared_run, "hostile_images.pdf")


@pytest.fixture(scope="module")
def classes_doc():
    with pymupdf.open(fixture_pdf("image_classes.pdf")) as doc:
        yield doc


def child_on(manifest: dict, page: int) -> dict:
    (child,) = [c for c in manifest.children if c.page == page]
    return child


def archived_image(store: LocalStore, child: dict) -> Image.Image:
    return Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 26)))


def mupdf_pixels(doc: pymupdf.Document, xref: int) -> Image.Image:
    """What MuPDF decodes for the image, in sRGB (gray stays gray); a stencil's coverage as L."""
    pix = pymupdf.Pixmap(doc, xref)
    if pix.alpha and pix.n == 1:
        return Image.frombytes("L", (pix.width, pix.height), pix.samples)
    if pix.alpha:
        pix = pymupdf.Pixmap(pix, 0)
    if pix.colorspace.name not in {"DeviceGray", "DeviceRGB"}:
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    return Image.frombytes("L" if pix.n == 1 else "RGB", (pix.width, pix.height), pix.samples)


@pytest.mark.parametrize("name", CLASSES)
def test_every_image_class_is_archived_with_the_pixels_mupdf_decodes(
    name, classes_run, classes_doc
):
    store, manifest = classes_run
    page = CLASSES.index(name) + 1
    child = child_on(manifest, page)
    assert (child.state, child.quarantine_reason) == ("archived", None)
    expected = mupdf_pixels(classes_doc, classes_doc[page - 1].get_images()[0][0])
    archived = archived_image(store, child)
    assert archived.size == expected.size == _classes.SIZE
    assert archived.convert(expected.mode).tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", STENCILS)
def test_stencil_masks_are_archived_as_one_bit_images(name, classes_run):
    store, manifest = classes_run
    assert archived_image(store, child_on(manifest, CLASSES.index(name) + 1)).mode == "1"


def test_an_inverted_decode_array_paints_the_one_bits_of_a_stencil(classes_run):
    store, manifest = classes_run
    child = child_on(manifest, CLASSES.index("stencil_decode_inverted") + 1)
    painted = archived_image(store, child).convert("L")
    assert painted.tobytes() == _classes.mask_image().convert("L").tobytes()


def test_jbig2_with_and_without_globals_gives_the_same_pixels(classes_run):
    store, manifest = classes_run
    plain, with_globals = (child_on(manifest, CLASSES.index(n) + 1) for n in STENCILS[1:3])
    assert plain.content_hash == with_globals.content_hash


def test_the_whole_class_file_completes_with_nothing_quarantined(classes_run):
    _, manifest = classes_run
    assert manifest.state == "complete"
    assert manifest.counts.archived == len(CLASSES)
    assert manifest.counts.quarantined == 0


@pytest.mark.parametrize("name", list(_hostile.hostile_sizes()))
def test_a_codestream_header_that_contradicts_the_dictionary_is_quarantined(name, hostile_run):
    _, manifest = hostile_run
    child = child_on(manifest, list(_hostile.hostile_sizes()).index(name) + 1)
    width, height = _hostile.hostile_sizes()[name]
    assert (child.state, child.quarantine_reason) == ("quarantined", "dimension_mismatch")
    assert f"header says {width}x{height}" in child.quarantine_detail


def test_nothing_from_the_hostile_images_is_archived(hostile_run):
    _, manifest = hostile_run
    assert manifest.state == "complete"
    assert [c.state for c in manifest.children] == ["quarantined"] * len(_hostile.hostile_sizes())
    assert manifest.counts.archived == 0

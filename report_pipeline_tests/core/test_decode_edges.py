"""No false quarantines: valid images a strict check could refuse are archived with MuPDF's pixels.

decode_edge_cases.pdf has one page per case (fixtures/_edge.py EDGE_CASES order): JPEGs Pillow
refuses (MuPDF fallback), a Flate stream libmagic misnames, JPEGs behind a PNG or TIFF predictor;
and a CCITT stencil whose /Columns contradicts /Width, stopped before decode.
"""

import pymupdf
import pytest

from fixtures import _classes, _edge, _verify_classes
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.core.test_image_classes import (
    archived_image,
    child_on,
    mupdf_pixels,
    run_once,
)

NAME = "decode_edge_cases.pdf"
CASES = list(_edge.EDGE_CASES)
ARCHIVED = [name for name in CASES if name not in _edge.QUARANTINED]


@pytest.fixture(scope="module")
def edge_run(shared_run):
    return run_once(shared_run, NAME)


@pytest.fixture(scope="module")
def edge_doc():
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        yield doc


def page_of(name: str) -> int:
    return CASES.index(name) + 1


@pytest.mark.parametrize("name", ARCHIVED)
def test_each_edge_case_is_archived_with_the_pixels_mupdf_decodes(name, edge_run, edge_doc):
    store, manifest = edge_run
    child = child_on(manifest, page_of(name))
    assert (child.state, child.quarantine_reason) == ("archived", None)
    expected = mupdf_pixels(edge_doc, edge_doc[page_of(name) - 1].get_images()[0][0])
    archived = archived_image(store, child)
    assert archived.size == expected.size == _classes.SIZE
    assert archived.convert(expected.mode).tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", ["jpeg_short_adobe", "jpeg_short_icc"])
def test_pillow_really_refuses_the_jpegs_that_mupdf_decodes(name, edge_doc):
    xref = edge_doc[page_of(name) - 1].get_images()[0][0]
    assert _verify_classes.pillow_refuses(edge_doc.xref_stream_raw(xref))


def test_a_flate_stream_libmagic_misnames_is_recorded_as_zlib(edge_run):
    _, manifest = edge_run
    assert child_on(manifest, page_of("flate_tfm_lookalike")).signature == "application/zlib"


def test_a_ccitt_image_whose_columns_contradict_its_width_is_quarantined(edge_run):
    _, manifest = edge_run
    child = child_on(manifest, page_of("ccitt_columns_mismatch"))
    assert (child.state, child.quarantine_reason) == ("quarantined", "dimension_mismatch")
    width, height = _classes.SIZE
    assert child.quarantine_detail == (
        f"header says {_edge.FAX_COLUMNS}x{height}, PDF declares {width}x{height}"
    )


def test_the_edge_file_completes_with_only_the_contradiction_quarantined(edge_run):
    _, manifest = edge_run
    assert manifest.state == "complete"
    assert manifest.counts.archived == len(ARCHIVED)
    assert manifest.counts.quarantined == len(_edge.QUARANTINED)

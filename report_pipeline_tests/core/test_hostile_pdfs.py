"""Hostile and real-world PDFs at intake: repaired files, lying page trees, hidden encryption."""

from __future__ import annotations

import pymupdf
import pytest

from fixtures._trees import CATALOG, PAGE, classic_pdf, flat_tree
from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.intake.intake import Inspection, RefusedInput, inspect_pdf
from report_pipeline.core.settings import Limits
from report_pipeline.core.worker.page_tree import walk
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.core.test_manifest import DEADLINES, REF


def refusal(path, limits: Limits | None = None) -> RefusedInput:
    with pytest.raises(RefusedInput) as caught:
        inspect_pdf(path, limits or Limits())
    return caught.value


def written(tmp_path, data: bytes):
    path = tmp_path / "report.pdf"
    path.write_bytes(data)
    return path


def test_a_repaired_xref_is_processed_and_flagged_repaired(run_fixture):
    assert inspect_pdf(fixture_pdf("broken_xref.pdf"), Limits()) == Inspection(12, True)
    manifest = run_fixture("broken_xref.pdf")
    assert (manifest.state, manifest.repaired) == ("complete", True)
    assert manifest.counts.archived == 15 and manifest.counts.distinct_images == 2
    assert run_fixture("repeated_image.pdf").repaired is False


def test_refuse_repaired_turns_a_repaired_file_into_damaged():
    refused = refusal(fixture_pdf("broken_xref.pdf"), Limits(refuse_repaired=True))
    assert refused.code == "damaged" and "repairing" in refused.message


def test_a_file_that_cannot_be_opened_even_repaired_is_damaged(tmp_path):
    assert refusal(written(tmp_path, b"%PDF-1.7\nnothing but garbage\n")).code == "damaged"


def test_encryption_with_an_empty_user_password_is_refused(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "opens without a password")
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="", owner_pw="owner")
    assert not pymupdf.open(stream=data).needs_pass  # MuPDF opens it silently
    assert refusal(written(tmp_path, data)).code == "encrypted"


@pytest.mark.parametrize(
    ("objects", "code", "words"),
    [(flat_tree(2, 5), "page_count_mismatch", "holds 2 pages but its /Count says 5"),
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", b"<</Type/Pages/Kids[2 0 R]/Count 1>>"],
      "bad_page_tree", "cycle"),
     ([CATALOG, *[b"<</Type/Pages/Kids[%d 0 R]/Count 1>>" % n for n in range(3, 103)], PAGE],
      "bad_page_tree", "deeper than 64"),
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R 9 0 R]/Count 2>>", PAGE], "bad_page_tree", "missing"),
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", b"<</Type/Font>>"], "bad_page_tree",
      "/Font")],
)  # fmt: skip
def test_a_page_tree_that_disagrees_or_cannot_be_walked_is_refused(tmp_path, objects, code, words):
    refused = refusal(written(tmp_path, classic_pdf(objects)))
    assert refused.code == code and words in refused.message


def test_the_page_tree_walk_counts_the_leaves_of_nested_nodes():
    middle = b"<</Type/Pages/Parent 2 0 R/Kids[5 0 R 6 0 R]/Count 2>>"
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R 4 0 R]/Count 3>>", middle, PAGE, PAGE, PAGE]
    doc = pymupdf.open(stream=classic_pdf(objects))
    assert (walk(doc).leaves, walk(doc).declared) == (3, 3)


def test_a_manifest_is_never_complete_while_pages_are_unaccounted_for():
    short = mf.build_manifest(REF, {1: 0, 2: 0}, [], DEADLINES, "now", pages=3)
    assert short.state == "incomplete" and short.counts.pages_unaccounted == 1
    whole = mf.build_manifest(REF, {1: 0, 2: 0}, [], DEADLINES, "now", pages=2, repaired=True)
    assert whole.state == "complete" and whole.repaired is True

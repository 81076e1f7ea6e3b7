"""Hostile and real-world PDFs at intake: repaired files, lying page trees, hidden encryption."""

from __future__ import annotations

import pymupdf
import pytest

from fixtures._objects import image, stream
from fixtures._trees import CATALOG, PAGE, classic_pdf, flat_tree
from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.intake.intake import Inspection, RefusedInput, inspect_pdf
from report_pipeline.core.intake.page_tree import walk
from report_pipeline.core.model.records import SourceFacts
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.core.test_manifest import DEADLINES, REF

pytestmark = pytest.mark.slow


def refusal(path, limits: Limits | None = None) -> RefusedInput:
    with pytest.raises(RefusedInput) as caught:
        inspect_pdf(path, limits or Limits())
    return caught.value


def written(tmp_path, data: bytes):
    path = tmp_path / "report.pdf"
    path.write_bytes(data)
    return path


def test_a_repaired_xref_is_processed_and_flagged_repaired(shared_run):
    facts = SourceFacts(repaired=True)
    assert inspect_pdf(fixture_pdf("broken_xref.pdf"), Limits()) == Inspection(12, facts)
    _, manifest = shared_run("broken_xref.pdf")
    assert (manifest.state, manifest.repaired) == ("complete", True)
    assert manifest.counts.archived == 15 and manifest.counts.distinct_images == 2
    assert shared_run("repeated_image.pdf")[1].repaired is False


def test_refuse_repaired_turns_a_repaired_file_into_damaged():
    refused = refusal(fixture_pdf("broken_xref.pdf"), Limits(refuse_repaired=True))
    assert refused.code == "damaged" and "repairing" in refused.message


def test_a_file_that_cannot_be_opened_even_repaired_is_damaged(tmp_path):
    assert refusal(written(tmp_path, b"%PDF-1.7\nnothing but garbage\n")).code == "damaged"


def permissions_only(tmp_path):
    """A PDF encrypted with an empty user password: it opens without one; print only."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "opens without a password")
    granted = pymupdf.PDF_PERM_PRINT | pymupdf.PDF_PERM_ACCESSIBILITY
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="", owner_pw="owner",
                       permissions=granted)  # fmt: skip
    assert not pymupdf.open(stream=data).needs_pass  # MuPDF opens it silently
    return written(tmp_path, data)


def test_encryption_with_an_empty_user_password_is_read_and_recorded(tmp_path):
    inspection = inspect_pdf(permissions_only(tmp_path), Limits())
    assert inspection.pages == 1 and inspection.facts.encrypted is True
    assert inspection.facts.permissions == ("print", "accessibility")


def test_an_encrypted_report_that_opens_without_a_password_is_archived_whole(
    tmp_path, store, settings
):
    image = pymupdf.open(fixture_pdf("repeated_image.pdf"))
    doc = pymupdf.open()
    doc.insert_pdf(image, from_page=0, to_page=0)
    path = tmp_path / "locked.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_128, user_pw="", owner_pw="o",
             permissions=pymupdf.PDF_PERM_PRINT)  # fmt: skip
    manifest = run_report(store, path, settings, "inbox", "2026-10")
    assert manifest.state == "complete" and manifest.counts.quarantined == 0
    assert manifest.counts.archived == len(image[0].get_images(full=True)) > 0
    assert (manifest.encrypted, manifest.permissions) == (True, ("print",))


def test_refuse_encrypted_refuses_it_and_a_password_is_refused_always(tmp_path):
    refused = refusal(permissions_only(tmp_path), Limits(refuse_encrypted=True))
    assert refused.code == "encrypted" and "refuse_encrypted is set" in refused.message
    needs_password = refusal(fixture_pdf("encrypted.pdf"))
    assert needs_password.message == "PDF is encrypted; submit an unencrypted copy"


@pytest.mark.parametrize(
    ("objects", "code", "words"),
    [(flat_tree(2, 5), "page_count_mismatch", "holds 2 pages but its /Count says 5"),
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", b"<</Type/Pages/Kids[2 0 R]/Count 1>>"],
      "bad_page_tree", "cycle"),
     ([CATALOG, *[b"<</Type/Pages/Kids[%d 0 R]/Count 1>>" % n for n in range(3, 103)], PAGE],
      "bad_page_tree", "deeper than 64"),
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R 9 0 R]/Count 2>>", PAGE], "bad_page_tree", "missing"),
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>", b"<</Type/Font>>"], "bad_page_tree",
      "/Font"),
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R 7]/Count 2>>", PAGE], "bad_page_tree",
      "not a reference"),
     ([CATALOG, b"<</Type/Pages/Kids[<</Type/Pages/Kids[3 0 R]/Count 1>>]/Count 1>>", PAGE],
      "bad_page_tree", "not a reference"),
     # a page MuPDF's parser cannot read: an entry nested past its depth (crafted round 13;
     # it was `inspection_failed`, "FzErrorLimit")
     ([CATALOG, b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
       b"<</Type/Page/Parent 2 0 R/X%s>>" % (b"[" * 50_000 + b"]" * 50_000)],
      "bad_page_tree", "cannot be read (exception stack overflow")],
)  # fmt: skip
def test_a_page_tree_that_disagrees_or_cannot_be_walked_is_refused(tmp_path, objects, code, words):
    refused = refusal(written(tmp_path, classic_pdf(objects)))
    assert refused.code == code and words in refused.message


SHARED_LEAF = [CATALOG, b"<</Type/Pages/Kids[3 0 R 3 0 R]/Count 2>>", PAGE]
DIAMOND = [CATALOG, b"<</Type/Pages/Kids[3 0 R 4 0 R]/Count 2>>",
           b"<</Type/Pages/Parent 2 0 R/Kids[5 0 R]/Count 1>>",
           b"<</Type/Pages/Parent 2 0 R/Kids[5 0 R]/Count 1>>", PAGE]  # fmt: skip


@pytest.mark.parametrize(("objects", "pages", "shared"), [(SHARED_LEAF, 2, 1), (DIAMOND, 2, 1)])
def test_a_shared_page_node_counts_each_time_it_appears_as_mupdf_counts_it(
    tmp_path, objects, pages, shared
):
    path = written(tmp_path, classic_pdf(objects))
    assert len(pymupdf.open(path)) == pages
    inspection = inspect_pdf(path, Limits())
    assert (inspection.pages, inspection.facts.shared_page_nodes) == (pages, shared)


def test_a_page_written_in_its_parents_kids_is_a_page_as_mupdf_draws_it(tmp_path, store):
    """qpdf's direct-pages.pdf: page dictionaries in /Kids, not references to them (invalid).
    MuPDF draws each, poppler lists their images not, qpdf makes them indirect."""
    content = b"q 100 0 0 100 0 0 cm /Im Do Q"
    page = (b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 200 200]/Contents 4 0 R"
            b"/Resources<</XObject<</Im 3 0 R>>>>>>")  # fmt: skip
    kids = b"<</Type/Pages/Kids[%s 5 0 R %s]/Count 3>>" % (page, page)
    objects = [CATALOG, kids, image(40), stream(b"", content), PAGE]
    path = written(tmp_path, classic_pdf(objects))
    assert len(pymupdf.open(path)) == 3
    inspection = inspect_pdf(path, Limits())
    assert (inspection.pages, inspection.facts.shared_page_nodes) == (3, 0)
    manifest = run_report(store, path, PipelineSettings(tmp_path / "w"), "inbox", "2026-10")
    assert manifest.state == "complete"
    assert [(c.page, c.state, c.xref) for c in manifest.children] == [
        (1, "archived", 3), (3, "archived", 3),
    ]  # fmt: skip


def test_sharing_that_multiplies_the_tree_past_the_visit_limit_is_refused(tmp_path):
    levels = [b"<</Type/Pages/Kids[%d 0 R %d 0 R]/Count %d>>" % (n + 1, n + 1, 2 ** (22 - n))
              for n in range(2, 22)]  # fmt: skip
    refused = refusal(written(tmp_path, classic_pdf([CATALOG, *levels, PAGE])))
    assert refused.code == "bad_page_tree" and "larger than 100000 nodes" in refused.message


def test_the_page_tree_walk_counts_the_leaves_of_nested_nodes():
    middle = b"<</Type/Pages/Parent 2 0 R/Kids[5 0 R 6 0 R]/Count 2>>"
    objects = [CATALOG, b"<</Type/Pages/Kids[3 0 R 4 0 R]/Count 3>>", middle, PAGE, PAGE, PAGE]
    doc = pymupdf.open(stream=classic_pdf(objects))
    assert (walk(doc).leaves, walk(doc).declared) == (3, 3)


def test_a_manifest_is_never_complete_while_pages_are_unaccounted_for():
    short = mf.build_manifest(REF, {1: 0, 2: 0}, [], DEADLINES, "now", pages=3)
    assert short.state == "incomplete" and short.counts.pages_unaccounted == 1
    whole = mf.build_manifest(REF, {1: 0, 2: 0}, [], DEADLINES, "now", pages=2,
                              facts=SourceFacts(repaired=True))  # fmt: skip
    assert whole.state == "complete" and whole.repaired is True

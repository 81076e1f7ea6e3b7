"""What a viewer does not show (issue 30 item 2): hidden optional content and hidden annotations
are records of their own, state `hidden` with the reason, compared page by page with MuPDF's
drawing device on hidden_content.pdf (fixtures/_hidden.py); not archived unless the deployment
asks, and accounted for everywhere the manifest is read."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pymupdf
import pytest

from fixtures._hidden import HIDDEN_PAGES, hidden_content
from fixtures._verify_draws import mupdf_draws
from report_pipeline.core.archive import summary, table
from report_pipeline.core.checks import month_checks
from report_pipeline.core.decode import child as decode_child
from report_pipeline.core.decode.child import decode_in_process
from report_pipeline.core.model import store_json
from report_pipeline.core.model.records import SCHEMA_VERSION
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.pdf.pages import page_images
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.review import queue
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.core.test_manifest import build, record

NAME = "hidden_content.pdf"
SHOWN = sum(shown for shown, _ in HIDDEN_PAGES.values())
HIDDEN = sum(sum(reasons.values()) for _, reasons in HIDDEN_PAGES.values())


@pytest.mark.parametrize("page", sorted(HIDDEN_PAGES))
def test_a_pages_shown_records_are_what_mupdf_draws_and_the_rest_say_why(page):
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        refs = page_images(doc, page)
        drawn = mupdf_draws(doc[page - 1])
    shown, reasons = HIDDEN_PAGES[page]
    assert sum(not ref.hidden for ref in refs) == drawn == shown
    assert Counter(ref.hidden for ref in refs if ref.hidden) == reasons
    with pymupdf.open(stream=hidden_content(everything_shown=True), filetype="pdf") as twin:
        assert mupdf_draws(twin[page - 1]) == len(refs)  # every layer on, no flag that hides
        assert not any(ref.hidden for ref in page_images(twin, page))


@pytest.mark.slow
def test_hidden_images_are_accounted_for_and_not_archived(shared_run):
    folder, manifest = shared_run(NAME)
    store = LocalStore(folder)
    assert manifest.state == "complete"
    counts = manifest.counts
    assert (counts.archived, counts.quarantined, counts.hidden) == (SHOWN, 0, HIDDEN)
    assert counts.accounted == counts.expected == SHOWN + HIDDEN
    hidden = [c for c in manifest.children if c.state == "hidden"]
    assert all(c.hidden and c.object_key is None and c.content_hash is None for c in hidden)
    assert all(not c.hidden for c in manifest.children if c.state != "hidden")
    assert [(p.archived, p.hidden) for p in manifest.pages] == [
        (shown, sum(reasons.values())) for shown, reasons in HIDDEN_PAGES.values()
    ]
    assert len(list(store.list("archive"))) >= SHOWN  # only shown images have objects
    keys = {c.object_key for c in manifest.children if c.object_key}
    assert len(keys) == SHOWN


@pytest.mark.slow
def test_a_setting_archives_hidden_images_each_still_saying_why(store, tmp_path):
    settings = PipelineSettings(tmp_path / "work", limits=Limits(archive_hidden=True))
    manifest = run_report(store, fixture_pdf(NAME), settings, "inbox", "2026-10")
    assert manifest.state == "complete"
    assert (manifest.counts.archived, manifest.counts.hidden) == (SHOWN + HIDDEN, 0)
    reasons = Counter(c.hidden for c in manifest.children if c.hidden)
    assert sum(reasons.values()) == HIDDEN and set(reasons) == {
        "optional_content_off", "annotation_hidden"
    }  # fmt: skip
    assert all(c.state == "archived" and c.object_key for c in manifest.children)


def test_a_hidden_draw_is_never_read_and_a_shown_draw_of_its_image_is(tmp_path, monkeypatch):
    """Page 1 of the fixture draws image B inside the off layer; drawn again outside it, the
    image is decoded for the shown draw only."""
    with pymupdf.open(fixture_pdf(NAME)) as doc:
        page = doc[0]
        content = page.read_contents() + b" q 20 0 0 20 0 60 cm /B Do Q"
        doc.update_stream(page.get_contents()[0], content)
        doc.save(tmp_path / "twice.pdf")
    decoded: list[int] = []
    real = decode_child.process_image
    monkeypatch.setattr(
        decode_child,
        "process_image",
        lambda doc, ref, limits: decoded.append(ref.xref) or real(doc, ref, limits),
    )
    items = list(decode_in_process(tmp_path / "twice.pdf", [1], Limits()))
    b_draws = [item for item in items if item.xref == items[1].xref]
    assert [(item.outcome.state, item.hidden) for item in b_draws] == [
        ("hidden", "optional_content_off"), ("validated", "")
    ]  # fmt: skip
    assert decoded.count(items[1].xref) == 1 and len(decoded) == 5  # the shown draws only


def test_the_review_queue_never_lists_a_hidden_image_and_naming_one_says_it_is_hidden():
    hidden = replace(record(1, 0), state="hidden", hidden="annotation_hidden", format=None,
                     quarantine_reason=None)  # fmt: skip
    manifest = build({1: 2}, [hidden, record(1, 1, "quarantined", None)])
    assert [item.sequence for item in queue.items(manifest)] == [2]
    with pytest.raises(queue.ReviewError, match="is hidden \\(annotation_hidden\\), not"):
        queue.find(manifest, 1)


def test_checks_count_hidden_as_accounted_and_not_as_validated():
    hidden = replace(record(1, 0), state="hidden", hidden="optional_content_off",
                     quarantine_reason=None)  # fmt: skip
    manifest = build({1: 3}, [hidden, record(1, 1), record(1, 2, "quarantined", None)])
    complete = month_checks.manifest_complete(manifest)
    assert complete.passed and complete.metadata["hidden"] == 1
    rate = month_checks.quarantine_rate(manifest, month_checks.Thresholds())
    assert rate.metadata["quarantined_pct"] == 50.0 and rate.metadata["images"] == 2


@pytest.mark.slow
def test_show_and_the_table_say_what_is_hidden_and_old_manifests_keep_their_bytes(shared_run):
    _, manifest = shared_run(NAME)
    text = summary.summary(manifest).splitlines()
    at = text.index(f"  hidden                {HIDDEN} not shown, not archived")
    assert text[at + 1 : at + 3] == ["    3 x annotation_hidden", "    8 x optional_content_off"]
    assert summary.page_counts(manifest).splitlines()[0].endswith("quarantined  hidden  state")
    first = summary.page_occurrences(manifest, 1).splitlines()
    assert any(line.endswith("hidden (optional_content_off)") for line in first)
    rows = table.rows(manifest)
    assert Counter(row["hidden"] for row in rows if row["state"] == "hidden") == {
        "optional_content_off": 8, "annotation_hidden": 3
    }  # fmt: skip
    document = store_json.manifest_to_json(manifest)
    assert document["counts"]["hidden"] == HIDDEN and document["schema_version"] == SCHEMA_VERSION
    assert store_json.manifest_from_json(document) == manifest
    shown = replace(manifest, children=(), counts=replace(manifest.counts, hidden=0),
                    pages=tuple(replace(p, hidden=0) for p in manifest.pages))  # fmt: skip
    plain = store_json.manifest_to_json(shown)
    assert "hidden" not in plain["counts"] and all("hidden" not in p for p in plain["pages"])

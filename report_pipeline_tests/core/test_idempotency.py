from dataclasses import replace

import pytest

from report_pipeline.core.archive.publishing import record_children
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.steps import extract, stage
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow


def snapshot(store):
    return {o.key: (store.root / o.key).stat().st_mtime_ns for o in store.list("")}


def test_same_report_twice_writes_nothing_new_and_returns_the_same_manifest(store, settings):
    pdf = fixture_pdf("truncated_jpeg.pdf")
    first = run_report(store, pdf, settings, "inbox", "2026-10")
    before = snapshot(store)
    second = run_report(store, pdf, settings, "inbox", "2026-10")
    assert second == first
    assert snapshot(store) == before
    manifests = [k for k in before if k.endswith("manifest.json")]
    assert len(manifests) == 1


def test_new_extractor_version_re_extracts_into_a_new_revision(store, settings):
    pdf = fixture_pdf("repeated_image.pdf")
    old = run_report(store, pdf, settings, "inbox", "2026-10")
    new = run_report(store, pdf, replace(settings, extractor_version="next"), "inbox", "2026-10")
    assert new.parent_revision != old.parent_revision
    assert new.extractor_version == "next" and new.counts == old.counts
    manifests = [o.key for o in store.list("archive") if o.key.endswith("manifest.json")]
    assert len(manifests) == 2  # the new revision's, and the old one's tombstone
    assert store_json.read_manifest(store, old_key(old)).superseded_by == new.parent_revision


def old_key(manifest):
    return keys.manifest_key(manifest.report_id, manifest.parent_revision)


def test_working_material_is_gone_once_the_revision_is_complete(store, settings):
    run_report(store, fixture_pdf("truncated_jpeg.pdf"), settings, "inbox", "2026-10")
    assert list(store.list("staged")) == [] and list(store.list("work")) == []
    assert list(settings.work_root.rglob("w-*")) == []  # only empty hour buckets remain


def test_a_retried_extraction_writes_no_object_again(store, settings):
    """Extraction writes each image once, straight to its content-addressed archive key, and
    only if absent: a retry (or a second run of the task) creates nothing and rewrites nothing."""
    _, (task,) = stage(
        store, fixture_pdf("repeated_image.pdf"), "inbox", "2026-10", 0, settings, "s"
    )
    first = extract(store, task, settings, "first")
    images = {k: v for k, v in snapshot(store).items() if "/images/" in k}
    again = extract(store, task, settings, "retry")
    assert (first.new_objects, again.new_objects) == (2, 0) and len(images) == 2
    assert {k: v for k, v in snapshot(store).items() if "/images/" in k} == images
    archived, children = record_children(store, again, 2)
    assert archived.new_objects == 0 and {c.object_key for c in children} == set(images)

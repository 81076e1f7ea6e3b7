"""The manifest's attempts count every step attempt an image took: extraction's and archiving's."""

from __future__ import annotations

import pytest

from report_pipeline.core.archive.publishing import publish, record_children
from report_pipeline.core.steps import extract, stage
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.live


def test_a_retried_extraction_or_archive_shows_in_every_childs_attempts(store, settings):
    pdf = fixture_pdf("repeated_image.pdf")
    staged, tasks = stage(store, pdf, "inbox", "2026-10", 0, settings, "t", pages_per_task=6)
    assert len(tasks) == 2
    first = record_children(store, extract(store, tasks[0], settings, "t"), 1)[0]
    retried = record_children(store, extract(store, tasks[1], settings, "t", attempt=2), 3)[0]
    manifest, _ = publish(store, staged, [first, retried], settings.retention)

    by_page = {c.page: c for c in manifest.children}
    assert {by_page[p].attempts for p in range(1, 7)} == {1}  # both steps first time
    assert {by_page[p].attempts for p in range(7, 13)} == {4}  # 2 extraction + 2 archive retries
    assert all(c.validated_first_attempt == (c.page <= 6) for c in manifest.children)
    first_time = sum(c.page <= 6 for c in manifest.children)
    assert manifest.metrics.validated_first_attempt_pct == round(
        100 * first_time / len(manifest.children), 2
    )

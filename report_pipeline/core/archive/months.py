"""A month's revisions as the archive holds them: their manifests, and the one to show."""

from __future__ import annotations

from collections.abc import Iterator

from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.keys import manifest_key
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.store import Store

ARCHIVED_STATES = {"complete", "expired"}  # expired: archived once, deleted by the long clock


def revisions(store: Store, month: str | None = None) -> list[tuple[str, str]]:
    """Every archived revision, or only those of one month's reports."""
    reports = [
        r
        for r in store.list_prefixes(keys.ARCHIVE)
        if not month or keys.in_month(keys.prefix_name(r), month)
    ]
    return [
        (keys.prefix_name(report), keys.prefix_name(revision))
        for report in reports
        for revision in store.list_prefixes(report)
    ]


def month_manifests(store: Store, month: str) -> Iterator[tuple[str, Manifest]]:
    """(manifest key, manifest) of every revision of the month's reports that has a manifest."""
    for report_id, revision in revisions(store, month):
        key = manifest_key(report_id, revision)
        manifest = store_json.read_manifest(store, key)
        if manifest is not None:
            yield key, manifest


def latest_archived(store: Store, month: str) -> tuple[str, Manifest] | None:
    """The month's newest complete revision (key, manifest): what the month's archive is now.
    A revision a quarantine review revised is never it (the review's revision is newer)."""
    complete = [(m.created_at, key, m) for key, m in month_manifests(store, month)
                if m.state == "complete"]  # fmt: skip
    revised = {m.previous_revision for _, _, m in complete if m.previous_revision}
    complete = [item for item in complete if item[2].parent_revision not in revised]
    if not complete:
        return None
    _, key, manifest = max(complete, key=lambda item: item[0])
    return key, manifest

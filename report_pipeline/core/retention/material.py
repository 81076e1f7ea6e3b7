"""A revision's working material: its staged source, its work objects and, until its manifest is
published, whatever it put in the archive.

Shared by publishing (which deletes the staged source and work objects once the revision is
complete), the janitor and the retention audit (which delete or report all of it when its short
clock's deadline passes) and the untracked sweep, so the retention side does not import the
worker.
"""

from __future__ import annotations

from report_pipeline.core.model import keys, store_json
from report_pipeline.core.storage.parallel_io import together
from report_pipeline.core.storage.store import MissingObject, ObjectInfo, Store


def working_objects(store: Store, report_id: str, revision: str) -> list[ObjectInfo]:
    """A revision's staged source and work objects, as they are in the store now."""
    staged = keys.staged_key(report_id, revision)

    def source() -> list[ObjectInfo]:
        try:
            return [ObjectInfo(staged, store.size(staged))]  # one HEAD, not two
        except MissingObject:
            return []

    found, work = together(store, source, lambda: list(store.list(keys.work_prefix(revision))))
    return found + work


def unpublished_archive(store: Store, report_id: str, revision: str) -> list[ObjectInfo]:
    """What the revision holds in the archive that no published manifest covers: everything
    while it has no manifest or an incomplete one (its plan, child records, and the images and
    quarantined streams extraction writes straight to their archive keys), and anything but the
    tombstone under an expired one (a rerun's). A complete manifest covers it all: long clock."""
    key = keys.manifest_key(report_id, revision)
    manifest = store_json.read_manifest(store, key)
    if manifest is not None and manifest.state == "complete":
        return []
    tombstone = key if manifest is not None and manifest.state == "expired" else None
    return [o for o in store.list(keys.archive_prefix(report_id, revision)) if o.key != tombstone]


def revision_material(store: Store, report_id: str, revision: str) -> list[ObjectInfo]:
    """Everything the short clock covers for a revision: staged source, work objects and its
    unpublished archive objects (the archive's last: its staged source is what finds the rest)."""
    return working_objects(store, report_id, revision) + unpublished_archive(
        store, report_id, revision
    )

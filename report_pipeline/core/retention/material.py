"""A revision's working material: its staged source and its work objects.

Shared by publishing (which deletes it once the revision is complete) and the janitor (which
deletes it when its deadline passes), so the retention side does not import the worker.
"""

from __future__ import annotations

from report_pipeline.core.archive import keys
from report_pipeline.core.storage.store import ObjectInfo, Store


def working_objects(store: Store, report_id: str, revision: str) -> list[ObjectInfo]:
    """A revision's staged source and work objects, as they are in the store now."""
    staged = keys.staged_key(report_id, revision)
    found = [ObjectInfo(staged, store.size(staged))] if store.exists(staged) else []
    return found + list(store.list(keys.work_prefix(revision)))

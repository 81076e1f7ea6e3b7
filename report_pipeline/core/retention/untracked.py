"""Working material found by listing `staged/` and `work/` directly, without the deadline index.

Markers are written before the material they cover, so a crash leaves a marker with nothing
behind it, never material without a marker. This listing is the safety net for whatever still
escapes the index (a bug, a hand-copied object, a store restored from backup): a revision's
staged source and work objects are overdue once all of them are older, by the store's own
modification time, than lease + short clock. That is the marker sweep's rule for a revision
still in use (a rerun rewrites its material, so its objects are new again).

Its cost follows what is in `staged/` and `work/`: working material in flight, which publishing
deletes, so the listing stays small.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from report_pipeline.core.archive import keys
from report_pipeline.core.settings import RetentionPolicy
from report_pipeline.core.storage.store import ObjectInfo, Store

# The two working-material prefixes (messages.staged_key, messages.work_prefix):
#   staged/<report_id>/<revision>.pdf   and   work/<revision>/<task>/<object>
KINDS = {keys.STAGED: "untracked_staged", keys.WORK: "untracked_work"}


@dataclass(frozen=True)
class Untracked:
    """One revision's overdue objects under one prefix."""

    kind: str  # untracked_staged | untracked_work
    report_id: str  # "" when only work objects are left (their keys do not name the report)
    revision: str
    objects: list[ObjectInfo]
    deadline: datetime  # the newest object's modification time + lease + short clock

    @property
    def bytes(self) -> int:
        return sum(o.size for o in self.objects)


def overdue(store: Store, now: datetime, policy: RetentionPolicy) -> Iterator[Untracked]:
    """Every revision whose staged/work objects were all last written before now - hold."""
    found: dict[str, dict[str, list[ObjectInfo]]] = {}
    reports: dict[str, str] = {}
    for prefix in KINDS:
        for info in store.list(prefix):
            report_id, revision = keys.material_owner(info.key)
            found.setdefault(revision, {}).setdefault(prefix, []).append(info)
            reports[revision] = reports.get(revision) or report_id
    since = (now - policy.unfinished_hold).timestamp()
    for revision, groups in found.items():
        newest = max(o.modified for objects in groups.values() for o in objects)
        if newest > since:
            continue  # in use: some of it was written within lease + short clock
        deadline = datetime.fromtimestamp(newest, UTC) + policy.unfinished_hold
        for prefix, objects in groups.items():
            yield Untracked(KINDS[prefix], reports[revision], revision, objects, deadline)

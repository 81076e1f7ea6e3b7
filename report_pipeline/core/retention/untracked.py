"""Working material found by listing `staged/` and `work/` directly, without the deadline index.

Markers are written before the material they cover, so a crash leaves a marker with nothing
behind it, never material without a marker. This listing is the safety net for whatever still
escapes the index (a bug, a hand-copied object, a store restored from backup): a revision's
staged source and work objects are overdue once all of them are older, by the store's own
modification time, than lease + short clock. That is the marker sweep's rule for a revision
still in use (a rerun rewrites its material, so its objects are new again).

Extraction writes validated images straight to their archive keys, so a revision that never
publishes also leaves objects under `archive/<report_id>/<revision>/`. A revision found here by
its staged source (whose key names the report) takes those along: whatever of its archive no
published manifest covers (`material.unpublished_archive`), under the same oldest-object rule.

Its cost follows what is in `staged/` and `work/`: working material in flight, which publishing
deletes, so the listing stays small; the archive is opened only for an overdue revision.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from report_pipeline.core.model import keys
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.retention.material import unpublished_archive
from report_pipeline.core.storage.store import ObjectInfo, Store

# The two working-material prefixes listed (messages.staged_key, messages.work_prefix):
#   staged/<report_id>/<revision>.pdf   and   work/<revision>/<task>/<object>
# and, for a revision found there, its unpublished objects in archive/<report_id>/<revision>/;
# in the order a sweep deletes them: the staged source, which names the report, last.
KINDS = {
    keys.ARCHIVE: "untracked_archive",
    keys.WORK: "untracked_work",
    keys.STAGED: "untracked_staged",
}
LISTED = (keys.STAGED, keys.WORK)


@dataclass(frozen=True)
class Untracked:
    """One revision's overdue objects under one prefix."""

    kind: str  # untracked_staged | untracked_work | untracked_archive
    report_id: str  # "" when only work objects are left (their keys do not name the report)
    revision: str
    objects: list[ObjectInfo]
    deadline: datetime  # the newest object's modification time + lease + short clock

    @property
    def bytes(self) -> int:
        return sum(o.size for o in self.objects)


def overdue(store: Store, now: datetime, policy: RetentionPolicy) -> Iterator[Untracked]:
    """Every revision whose staged/work objects were all last written before now - hold, with
    (when its staged source names the report) what it holds in the archive unpublished: the
    images extraction writes straight to their archive keys go with it, oldest rule alike.
    A revision's archive objects come first and its staged source last, so a sweep cut short
    leaves what finds the rest."""
    found: dict[str, dict[str, list[ObjectInfo]]] = {}
    reports: dict[str, str] = {}
    for prefix in LISTED:
        for info in store.list(prefix):
            report_id, revision = keys.material_owner(info.key)
            found.setdefault(revision, {}).setdefault(prefix, []).append(info)
            reports[revision] = reports.get(revision) or report_id
    since = (now - policy.unfinished_hold).timestamp()
    for revision, groups in found.items():
        newest = max(o.modified for objects in groups.values() for o in objects)
        if newest > since:
            continue  # in use: some of it was written within lease + short clock
        if reports[revision] and (left := unpublished_archive(store, reports[revision], revision)):
            newest = max(newest, *(o.modified for o in left))
            if newest > since:
                continue
            groups = {keys.ARCHIVE: left, **groups}
        deadline = datetime.fromtimestamp(newest, UTC) + policy.unfinished_hold
        for prefix in sorted(groups, key=list(KINDS).index):
            yield Untracked(KINDS[prefix], reports[revision], revision, groups[prefix], deadline)

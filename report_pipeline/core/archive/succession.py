"""A month keeps one current revision: a new complete revision replaces the one before it.

The revision replaced is superseded at once: its objects are deleted (an audit event of kind
`superseded`) and its manifest stays as a tombstone naming its successor. A revision may
replace the month's current one only if it is newer: its report content arrived later, or it
is the same content extracted by a newer extractor. An older one (a run that staged a report
another arrival has since replaced) is itself superseded by the month's current revision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from report_pipeline.core.archive import months
from report_pipeline.core.archive.carry import carried
from report_pipeline.core.model import current as month_record
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.current import MonthHead
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.retention.janitor import expire_revision
from report_pipeline.core.storage.store import Store

SUPERSEDED = "superseded"
_TRIES = 20  # writers racing for one month; each lost race means another revision landed


class MonthChanged(Exception):
    """The month's current revision changed under a writer that may not follow it (a review
    decided on a revision that is no longer the month's)."""


def is_newer(new: Manifest, old: Manifest) -> bool:
    """Whether `new` may replace `old` as the month's revision: its content arrived later, or
    it is the same content by a newer extractor (a higher number; any other version string
    is taken as newer), or (same content, same extractor) a later
    review's revision. Without arrival times (revisions archived before they were recorded) the
    later archive wins, as it always did."""
    if new.source_hash != old.source_hash:
        new_at, old_at = _arrived(new), _arrived(old)
        if new_at is not None and old_at is not None:
            return new_at > old_at
        return new.created_at > old.created_at
    new_version, old_version = new.extractor_version, old.extractor_version
    if new_version != old_version:  # numbers compare as numbers; else the running one wins
        numbers = new_version.isdecimal() and old_version.isdecimal()
        return int(new_version) > int(old_version) if numbers else True
    return new.created_at > old.created_at


def _arrived(manifest: Manifest) -> datetime | None:
    source = manifest.source_file
    return parse_iso(source.arrived_at) if source and source.arrived_at else None


def cause(new: Manifest, old: Manifest | None) -> str:
    if old is None:
        return "archived"
    if new.previous_revision == old.parent_revision:
        return "review"
    return "reextraction" if new.source_hash == old.source_hash else "correction"


def head_for(new: Manifest, old: Manifest | None, now: datetime) -> MonthHead:
    """The record that makes `new` the month's revision (generation set by `advance`)."""
    return MonthHead(
        new.month, 0, new.report_id, new.parent_revision, old.parent_revision if old else "",
        cause(new, old), iso(now), new.deadlines.archive_delete_by, new.source_hash,
        new.extractor_version,
    )  # fmt: skip


_UNSEEN = object()  # make_current's `seen` when the caller read nothing


def make_current(
    store: Store, new: Manifest, basis: str, now: datetime, seen: object = _UNSEEN,
    told: Callable[[int], None] = lambda _: None,
) -> Manifest:  # fmt: skip
    """Make the complete revision `new` the month's current one, unless the month's current
    revision is newer; returns the month's manifest now. `new` was built on the month's
    revision `basis` ("" for none: decisions carried, its deadline kept); if another revision
    landed meanwhile, that one's decisions are carried before `new` replaces it. `seen`: the
    month as the caller just read it (`months.current(..., besides=new)`, None included),
    saving a read. `told`: the generation of the month's record that names the manifest
    returned, when one does (core/model/current.py)."""
    unrecorded = False  # the month had no record: revisions may have piled up beside it
    for attempt in range(_TRIES):
        now_current = seen if attempt == 0 and seen is not _UNSEEN else months.current(
            store, new.month, besides=new.parent_revision
        )  # fmt: skip
        assert now_current is None or isinstance(now_current, months.Current)
        old = now_current.manifest if now_current and now_current.live else None
        head = now_current.head if now_current else None
        if old is not None and old.parent_revision == new.parent_revision:
            if head is not None:
                told(head.generation)
            return new  # already the month's (a rerun)
        if attempt and _expired(store, new):
            return old or new  # superseded while it waited: the month moved on
        if old is not None and not is_newer(new, old):
            supersede(store, new, old.parent_revision, now)
            if head is not None:
                told(head.generation)
            return old
        if now_current is not None and now_current.head is None:  # before records: adopt it
            unrecorded = True
            month_record.advance(store, None, replace(head_for(old, None, now), cause="adopted"))
            continue
        if old is not None and old.parent_revision != basis:
            new, basis = carried(store, new, old), old.parent_revision
            key = keys.manifest_key(new.report_id, new.parent_revision)
            store_json.write_manifest(store, key, new)
        before = now_current.head if now_current else None
        if month_record.advance(store, before, head_for(new, old, now)):
            told(before.generation + 1 if before else 1)
            if unrecorded:
                settle(store, new, now)
            elif old is not None:
                supersede(store, old, new.parent_revision, now)
            return new
    raise MonthChanged(f"{new.month} kept changing while revision {new.parent_revision} was "
                       "published: run it again")  # fmt: skip


def _expired(store: Store, manifest: Manifest) -> bool:
    key = keys.manifest_key(manifest.report_id, manifest.parent_revision)
    stored = store_json.read_manifest(store, key)
    return stored is not None and stored.state == "expired"


def supersede(store: Store, manifest: Manifest, successor: str, now: datetime) -> None:
    """Delete a revision's objects (audited) and leave its manifest as a tombstone that names
    `successor`."""
    deadline = parse_iso(manifest.deadlines.archive_delete_by)
    expire_revision(store, manifest.report_id, manifest.parent_revision, deadline, now,
                    kind=SUPERSEDED, successor=successor)  # fmt: skip


def settle(store: Store, current: Manifest, now: datetime) -> None:
    """Supersede every other complete revision of the month that `current` is newer than (the
    one it replaced, and any a month archived before records were kept piled up)."""
    for _, manifest in list(months.month_manifests(store, current.month)):
        other = manifest.parent_revision != current.parent_revision
        if other and manifest.state == "complete" and is_newer(current, manifest):
            supersede(store, manifest, current.parent_revision, now)

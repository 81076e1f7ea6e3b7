"""A month's revisions as the archive holds them: their manifests, and the month's current one.

The current revision is the one the month's record names (core/model/current.py). A month
archived before that record existed has none until its next change; until then its current
revision is its newest complete one that no review revised, as it always was.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from report_pipeline.core.model import current as month_record
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.current import MonthHead
from report_pipeline.core.model.keys import manifest_key
from report_pipeline.core.model.messages import RevisionRef
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.parallel_io import io_workers, map_io, together
from report_pipeline.core.storage.store import Store

ARCHIVED_STATES = {"complete", "expired"}  # expired: archived once, deleted by the long clock


@dataclass(frozen=True)
class Current:
    """The month's current revision: its record (None for a month archived before records were
    kept), its manifest's key and its manifest (complete; expired once its clock ran out)."""

    head: MonthHead | None
    key: str
    manifest: Manifest | None  # None only if the record names a manifest that is gone

    @property
    def live(self) -> bool:
        return self.manifest is not None and self.manifest.state == "complete"


def revisions(
    store: Store, month: str | None = None, reports: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """Every archived revision, or only those of one month's reports. `reports`: report ids
    the month likely holds (the caller's own), whose revisions are listed beside the archive's
    own listing rather than after it (on S3: one wait fewer when the month holds no other
    report); the archive's listing still says which reports exist."""
    ahead = [
        f"{keys.ARCHIVE}/{r}" for r in dict.fromkeys(reports) if month and keys.in_month(r, month)
    ]
    if io_workers(store) <= 1:
        ahead = []
    top, *early = together(
        store,
        lambda: store.list_prefixes(keys.ARCHIVE),
        *[lambda report=report: list(store.list_prefixes(report)) for report in ahead],
    )
    found = [r for r in top if not month or keys.in_month(keys.prefix_name(r), month)]
    listed = dict(zip(ahead, early, strict=True))
    rest = [report for report in found if report not in listed]
    below = map_io(store, lambda report: list(store.list_prefixes(report)), rest)
    listed.update(zip(rest, below, strict=True))
    return [
        (keys.prefix_name(report), keys.prefix_name(revision))
        for report in found
        for revision in listed[report]
    ]


def month_manifests(
    store: Store, month: str, besides: str = "", listed: list[tuple[str, str]] | None = None,
    reports: Sequence[str] = (),
) -> Iterator[tuple[str, Manifest]]:  # fmt: skip
    """(manifest key, manifest) of every revision of the month's reports that has a manifest
    (but `besides`, not read). `listed`: the month's `revisions`, when the caller has them;
    else `reports` are those the month likely holds (`revisions`)."""
    listed = revisions(store, month, reports) if listed is None else listed
    wanted = [manifest_key(r, revision) for r, revision in listed if revision != besides]
    read = map_io(store, lambda key: store_json.read_manifest(store, key), wanted)
    for key, manifest in zip(wanted, read, strict=True):
        if manifest is not None:
            yield key, manifest


def current(store: Store, month: str, besides: str = "", report: str = "") -> Current | None:
    """The month's current revision, or None when nothing was ever archived for it. `besides`:
    a revision a month without a record must not count (one about to be recorded); `report`:
    the report id the caller's revision belongs to (its revisions are listed early)."""
    if io_workers(store) > 1:  # S3: the listing is needed only without a record, but then it
        head, listed = together(  # costs no wait of its own
            store,
            lambda: month_record.head(store, month),
            lambda: revisions(store, month, (report,) if report else ()),
        )
    else:
        head, listed = month_record.head(store, month), None
    if head is None:
        return _unrecorded(store, month, besides, listed)
    key = manifest_key(head.report_id, head.revision)
    return Current(head, key, store_json.read_manifest(store, key))


def latest_archived(
    store: Store, month: str, expected: str = "", generation: int = 0
) -> tuple[str, Manifest] | None:
    """(key, manifest) of the month's current revision while it is archived (complete): what
    every surface shows as the month. None: nothing archived, or its archive clock ran out.

    `expected` and `generation`: a manifest key and the generation of the month's record that
    named it (what publish_manifest left in its run). It is current as long as no later
    generation exists (generations are written once, in order), asked beside the manifest's
    read: one wait on S3. A later generation, or no hint: the month is read as usual."""
    if expected and generation > 0:
        later, manifest = together(
            store,
            lambda: store.exists(keys.current_key(month, generation + 1)),
            lambda: store_json.read_manifest(store, expected),
        )
        if not later:
            live = manifest is not None and manifest.state == "complete"
            return (expected, manifest) if live else None
    found = current(store, month)
    if found is None or found.manifest is None or not found.live:
        return None
    return found.key, found.manifest


def current_for(store: Store, ref: RevisionRef) -> Manifest | None:
    """The month's current manifest when it is this report, extracted by this extractor (it may
    be a revision a review made of `ref`'s): nothing is to be extracted again."""
    found = current(store, ref.month, besides=ref.revision, report=ref.report_id)
    manifest = found.manifest if found and found.live else None
    return manifest if manifest is not None and holds(manifest, ref) else None


# (the month's current manifest when it holds the revision's report, the revision's own manifest
# when it is complete): either one means nothing is extracted again
Held = tuple[Manifest | None, Manifest | None]


def held(store: Store, ref: RevisionRef) -> Held:
    """What the month holds of `ref` already, both read side by side (one wait on S3)."""
    now, own = together(
        store, lambda: current_for(store, ref), lambda: store_json.complete_manifest(store, ref)
    )
    return now, own


def holds(manifest: Manifest, ref: RevisionRef) -> bool:
    """`manifest` is `ref`'s report by `ref`'s extractor (`ref`'s revision, or a review's)."""
    same = (manifest.report_id, manifest.source_hash, manifest.extractor_version)
    return same == (ref.report_id, ref.source_hash, ref.extractor_version)


def _unrecorded(
    store: Store, month: str, besides: str, listed: list[tuple[str, str]] | None
) -> Current | None:
    """A month without a record: its newest complete revision that no review revised."""
    complete = [(m.created_at, key, m) for key, m in month_manifests(store, month, besides, listed)
                if m.state == "complete"]  # fmt: skip
    revised = {m.previous_revision for _, _, m in complete if m.previous_revision}
    complete = [item for item in complete if item[2].parent_revision not in revised]
    if not complete:
        return None
    _, key, manifest = max(complete, key=lambda item: item[0])
    return Current(None, key, manifest)

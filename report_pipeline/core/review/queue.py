"""The review queue: the quarantined images of each month's archived revision that no reviewer
has decided on yet, one item per distinct object, with every page it occurs on."""

from __future__ import annotations

from dataclasses import dataclass

from report_pipeline.core.archive.months import Current, current, latest_archived
from report_pipeline.core.model.keys import ARCHIVE, month_of, prefix_name
from report_pipeline.core.model.records import ChildRecord, Manifest
from report_pipeline.core.storage.store import Store


class ReviewError(Exception):
    """A request the review cannot carry out; `code` names the class (the CLI's exit code)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class Item:
    """One quarantined object of a month's archived revision."""

    month: str
    revision: str
    sequence: int  # its first occurrence's: what `show` and `decide` name it by
    pages: tuple[int, ...]
    sequences: tuple[int, ...]  # every occurrence
    origin: str
    reason: str
    detail: str
    declared_type: str
    width: int
    height: int
    stream_bytes: int
    evidence_key: str  # "" when the decoder kept none (it died on the image)
    decision: str  # "" while undecided

    def as_json(self) -> dict:
        return {**self.__dict__, "pages": list(self.pages), "sequences": list(self.sequences)}


def archived(store: Store, month: str) -> tuple[str, Manifest]:
    """The month's archived revision (manifest key, manifest), or ReviewError `unknown_month`."""
    found = month_now(store, month)
    assert found.manifest is not None
    return found.key, found.manifest


def month_now(store: Store, month: str, expected_revision: str = "") -> Current:
    """The month's current revision while archived, or ReviewError `unknown_month`; with
    `expected_revision` (the one a reviewer listed), `revision_changed` when it is another."""
    found = current(store, month)
    if found is None or found.manifest is None or not found.live:
        raise ReviewError("unknown_month", f"nothing is archived for {month}")
    now = found.manifest.parent_revision
    if expected_revision and expected_revision != now:
        raise ReviewError("revision_changed", f"{month}'s archived revision is now {now}, "
                          f"not {expected_revision}: list the queue again")  # fmt: skip
    return found


def items(manifest: Manifest) -> list[Item]:
    """Every quarantined object of the revision (decided or not), in sequence order."""
    groups: dict[str, list[ChildRecord]] = {}
    for child in manifest.children:
        if child.state == "quarantined" or (child.review and child.review.decision):
            groups.setdefault(_identity(child), []).append(child)
    return [_item(manifest, group) for group in groups.values()]


def _identity(child: ChildRecord) -> str:
    """The same object wherever it is drawn: its evidence, else its PDF object, else itself."""
    if child.review and child.review.decision == "accepted":
        return f"accepted:{child.review.from_revision}:{child.xref or child.sequence}"
    if child.object_key:
        return child.object_key
    return f"xref:{child.xref}" if child.xref else f"seq:{child.sequence}"


def _item(manifest: Manifest, group: list[ChildRecord]) -> Item:
    first = group[0]
    return Item(
        manifest.month, manifest.parent_revision, first.sequence,
        tuple(sorted({c.page for c in group})), tuple(c.sequence for c in group), first.origin,
        first.quarantine_reason or "", first.quarantine_detail or "", first.declared_type,
        first.width, first.height, first.stream_bytes,
        first.object_key if first.state == "quarantined" and first.object_key else "",
        first.review.decision if first.review else "",
    )  # fmt: skip


def pending(store: Store, months: list[str]) -> list[Item]:
    """The undecided items of each of `months` that has an archived revision."""
    found = []
    for month in months:
        record = latest_archived(store, month)
        if record is not None:
            found += [i for i in items(record[1]) if not i.decision]
    return found


def archived_months(store: Store) -> list[str]:
    """Every month with an archived report, oldest first."""
    return sorted({month_of(prefix_name(r)) for r in store.list_prefixes(ARCHIVE)})


def find(manifest: Manifest, sequence: int) -> Item:
    """The item whose occurrences include `sequence`, or ReviewError `unknown_sequence`."""
    for item in items(manifest):
        if sequence in item.sequences:
            return item
    for child in (c for c in manifest.children if c.sequence == sequence):
        fate = f"hidden ({child.hidden})" if child.state == "hidden" else "archived"
        raise ReviewError("not_quarantined", f"image {sequence} of {manifest.month} is {fate}, "
                          "not quarantined: there is nothing to review")  # fmt: skip
    raise ReviewError("unknown_sequence", f"{manifest.month} has no image {sequence}")

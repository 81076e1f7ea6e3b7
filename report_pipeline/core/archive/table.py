"""The manifest as a table, one row per image occurrence, stored as CSV beside the manifest
(`archive/<report_id>/<revision>/manifest_table.csv`): the revision's access and long clock.

Built with pandas, imported in `frame`, the one place that needs it: importing it with the
definitions cost every code server, sensor tick, CLI call and run worker ~0.3-0.4 s of CPU
(bench/HISTORY.md, "Throughput"). The `manifest_table` asset
(defs/reports/manifest_table.py) and the benchmark's plain loop (bench/measure.py) both write
the table through `write_table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.model import handover, keys
from report_pipeline.core.model.keys import manifest_table_key
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.parallel_io import together
from report_pipeline.core.storage.store import Store

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = [
    ("sequence", "int", "the occurrence's number in page order"),
    ("page", "int", "page number (1-based)"),
    ("origin", "string", "how the page draws it: xobject, inline, form/xobject, ..."),
    ("state", "string", "archived | quarantined | hidden | expired"),
    ("reason", "string", "quarantine reason, empty when archived"),
    ("content_hash", "string", "sha256 of the normalized PNG (archived images)"),
    ("size", "string", "width x height in pixels"),
    ("format", "string", "archived format (png), empty when quarantined"),
    ("bytes", "int", "bytes of the archived PNG"),
    ("review", "string", "a reviewer's decision on a quarantined image: accepted | rejected"),
    ("hidden", "string", "why a viewer does not show it (optional_content_off, ...), or empty"),
]


def rows(manifest: Manifest) -> list[dict[str, str | int]]:
    """One row per image occurrence, in sequence order, with the COLUMNS."""
    return [
        {
            "sequence": c.sequence,
            "page": c.page,
            "origin": c.origin,
            "state": c.state,
            "reason": c.quarantine_reason or "",
            "content_hash": c.content_hash or "",
            "size": f"{c.width}x{c.height}",
            "format": c.format or "",
            "bytes": c.bytes,
            "review": c.review.decision if c.review else "",
            "hidden": c.hidden,
        }
        for c in manifest.children
    ]


def frame(manifest: Manifest) -> pd.DataFrame:
    """The table as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(rows(manifest), columns=[name for name, _, _ in COLUMNS])


def write_table(store: Store, manifest: Manifest) -> tuple[str, bool]:
    """The revision's table in the store, written once (a rerun of an unchanged report finds it
    and writes nothing): (its key, whether this call wrote it)."""
    key = manifest_table_key(manifest.report_id, manifest.parent_revision)
    written = store.put_if_absent(key, frame(manifest).to_csv(index=False).encode())
    return key, written


def write_current_table(
    store: Store, month: str, expected: str = "", generation: int = 0
) -> tuple[Manifest, str, bool] | None:
    """The table of the month's current revision (`months.latest_archived`, whose hints
    `expected` and `generation` are): (its manifest, the table's key, whether this call wrote
    it); None when nothing is archived. When this process published `expected` (handover.py),
    the table is written beside the check that no later generation of the month's record
    exists, one wait on S3 instead of two; a later one (the month moved on meanwhile) leaves
    that revision's table written, true of it, and the month's current revision is read."""
    known = handover.take_manifest(expected, generation) if expected and generation > 0 else None
    if known is not None and known.state == "complete":
        later, (key, written) = together(
            store,
            lambda: store.exists(keys.current_key(month, generation + 1)),
            lambda: write_table(store, known),
        )
        if not later:
            return known, key, written
    found = latest_archived(store, month, expected, generation)
    if found is None:
        return None
    return found[1], *write_table(store, found[1])

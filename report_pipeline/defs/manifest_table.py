"""`manifest_table`: the month's manifest as a table, one row per image occurrence.

Stored as CSV in the private store beside the manifest it is built from
(`archive/<report_id>/<revision>/manifest_table.csv`), so it shares the revision's access and
its long clock: the janitor deletes it with the revision's images. It never goes through an IO
manager (which would keep a copy in DAGSTER_HOME, outside retention).
"""

from typing import TYPE_CHECKING

import dagster as dg

from report_pipeline.core.archive import store_json
from report_pipeline.core.archive.keys import manifest_table_key
from report_pipeline.core.archive.records import Manifest
from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.guard import STORAGE_RETRY, guarded
from report_pipeline.defs.partitions import monthly_partitions
from report_pipeline.defs.resources import StoreResource

if TYPE_CHECKING:  # imported in `frame`, the one place that needs it
    import pandas as pd

COLUMNS = [
    ("sequence", "int", "the occurrence's number in page order"),
    ("page", "int", "page number (1-based)"),
    ("origin", "string", "how the page draws it: xobject, inline, form/xobject, ..."),
    ("state", "string", "archived | quarantined | expired"),
    ("reason", "string", "quarantine reason, empty when archived"),
    ("content_hash", "string", "sha256 of the normalized PNG (archived images)"),
    ("size", "string", "width x height in pixels"),
    ("format", "string", "archived format (png), empty when quarantined"),
    ("bytes", "int", "bytes of the archived PNG"),
]
SCHEMA = dg.TableSchema(
    columns=[dg.TableColumn(name, kind, description=text) for name, kind, text in COLUMNS]
)


def frame(manifest: Manifest) -> "pd.DataFrame":
    """The table as a DataFrame. pandas is imported here, in the step that builds the table:
    importing it with the definitions cost every code server, sensor tick, CLI call and run
    worker ~0.3-0.4 s of CPU (bench/README.md, "Throughput")."""
    import pandas as pd

    rows = [
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
        }
        for c in manifest.children
    ]
    return pd.DataFrame(rows, columns=[name for name, _, _ in COLUMNS])


def _manifest_key(context: dg.AssetExecutionContext) -> str:
    """The manifest of this partition's latest materialization of report_manifest."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=report_manifest.key, asset_partitions=[context.partition_key]
        ),
        limit=1,
    ).records
    if not records:
        raise dg.Failure(f"report_manifest has no materialization for {context.partition_key}")
    metadata = records[0].asset_materialization.metadata
    return metadata["manifest_key"].value


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[report_manifest],
    group_name="reports",
    kinds={"pandas", "csv"},
    retry_policy=STORAGE_RETRY,  # like every op that does storage I/O (defs/guard.py)
)
def manifest_table(context: dg.AssetExecutionContext, store: StoreResource):
    """One row per image occurrence of the month's revision: page, origin, state, quarantine
    reason, content hash, size (width x height), format and bytes. Written once per revision
    (a rerun of an unchanged report finds it and writes nothing)."""
    manifest_key = _manifest_key(context)

    def work() -> tuple[Manifest | None, str, bool]:
        backend = store.get_store()
        manifest = store_json.read_manifest(backend, manifest_key)
        if manifest is None:
            return None, "", False
        key = manifest_table_key(manifest.report_id, manifest.parent_revision)
        written = not backend.exists(key)
        if written:
            backend.put_bytes(key, frame(manifest).to_csv(index=False).encode())
        return manifest, key, written

    manifest, key, written = guarded(context, work)
    if manifest is None:
        raise dg.Failure("the manifest of this partition is not in the store")
    return dg.MaterializeResult(
        metadata={
            "dagster/column_schema": SCHEMA,
            "dagster/row_count": len(manifest.children),  # one row per occurrence (`frame`)
            "month": context.partition_key,
            "revision": manifest.parent_revision,
            "table_key": key,
            "written": written,
        }
    )

"""`manifest_table`: the month's manifest as a table, one row per image occurrence.

Stored as CSV in the private store beside the manifest it is built from
(`archive/<report_id>/<revision>/manifest_table.csv`), so it shares the revision's access and
its long clock: the janitor deletes it with the revision's images. It never goes through an IO
manager (which would keep a copy in DAGSTER_HOME, outside retention).
"""

import csv
import io

import dagster as dg

from report_pipeline.core.archive import store_json
from report_pipeline.core.archive.keys import manifest_table_key
from report_pipeline.core.archive.records import Manifest
from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.partitions import monthly_partitions
from report_pipeline.defs.resources import StoreResource

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


def table_csv(manifest: Manifest) -> tuple[str, int]:
    """The table as CSV text (a header row, then one row per occurrence) and its row count.
    The standard library's writer, not pandas: importing pandas (and numpy) cost every run
    worker, code server and CLI call ~0.4 s of its ~1.2 s definitions import (bench/README.md)."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow([name for name, _, _ in COLUMNS])
    for c in manifest.children:
        writer.writerow([
            c.sequence, c.page, c.origin, c.state, c.quarantine_reason or "",
            c.content_hash or "", f"{c.width}x{c.height}", c.format or "", c.bytes,
        ])  # fmt: skip
    return text.getvalue(), len(manifest.children)


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
    kinds={"csv"},
)
def manifest_table(context: dg.AssetExecutionContext, store: StoreResource):
    """One row per image occurrence of the month's revision: page, origin, state, quarantine
    reason, content hash, size (width x height), format and bytes. Written once per revision
    (a rerun of an unchanged report finds it and writes nothing)."""
    backend = store.get_store()
    manifest = store_json.read_manifest(backend, _manifest_key(context))
    if manifest is None:
        raise dg.Failure("the manifest of this partition is not in the store")
    table, rows = table_csv(manifest)
    key = manifest_table_key(manifest.report_id, manifest.parent_revision)
    written = not backend.exists(key)
    if written:
        backend.put_bytes(key, table.encode())
    return dg.MaterializeResult(
        metadata={
            "dagster/column_schema": SCHEMA,
            "dagster/row_count": rows,
            "month": context.partition_key,
            "revision": manifest.parent_revision,
            "table_key": key,
            "written": written,
        }
    )

"""`manifest_table`: the month's manifest as a table, one row per image occurrence.

Stored as CSV in the private store beside the manifest it is built from
(`archive/<report_id>/<revision>/manifest_table.csv`), so it shares the revision's access and
its long clock: the janitor deletes it with the revision's images. It never goes through an IO
manager (which would keep a copy in DAGSTER_HOME, outside retention).
"""

import dagster as dg

from report_pipeline.core.archive import store_json
from report_pipeline.core.archive.records import Manifest
from report_pipeline.core.archive.table import COLUMNS, write_table
from report_pipeline.defs.assets import report_manifest
from report_pipeline.defs.guard import STORAGE_RETRY, guarded
from report_pipeline.defs.partitions import monthly_partitions
from report_pipeline.defs.resources import StoreResource

SCHEMA = dg.TableSchema(
    columns=[dg.TableColumn(name, kind, description=text) for name, kind, text in COLUMNS]
)


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
        return manifest, *write_table(backend, manifest)

    manifest, key, written = guarded(context, work)
    if manifest is None:
        raise dg.Failure("the manifest of this partition is not in the store")
    return dg.MaterializeResult(
        metadata={
            "dagster/column_schema": SCHEMA,
            "dagster/row_count": len(manifest.children),  # a row per occurrence (archive/table.py)
            "month": context.partition_key,
            "revision": manifest.parent_revision,
            "table_key": key,
            "written": written,
        }
    )

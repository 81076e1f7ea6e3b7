"""`manifest_table`: the month's manifest as a table, one row per image occurrence.

Stored as CSV in the private store beside the manifest it is built from
(`archive/<report_id>/<revision>/manifest_table.csv`), so it shares the revision's access and
its long clock: the janitor deletes it with the revision's images. It never goes through an IO
manager (which would keep a copy in DAGSTER_HOME, outside retention). Its materialization also
carries the rows themselves (up to UI_ROWS), so an editor reads page 87's images in the UI.

It follows `report_manifest` on every path: the month's job builds both, and
`manifest_table_sensor` (declarative automation, running by default) builds it after a UI launch
or backfill of `report_manifest` alone.
"""

import dagster as dg

from report_pipeline.core.archive.table import COLUMNS, rows, write_current_table
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import StoreResource
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.guard import STORAGE_RETRY, guarded, retry_after_instance_outage
from report_pipeline.defs.reports.ops import MONTH_GENERATION_TAG, PUBLISHED_MANIFEST_TAG

SCHEMA = dg.TableSchema(
    columns=[dg.TableColumn(name, kind, description=text) for name, kind, text in COLUMNS]
)
UI_ROWS = 5000  # rows shown in the UI; the CSV and `report-pipeline show` have every row
HASH_CHARS = 12  # a short content hash in the UI (the CSV and the manifest keep all 64)
UI_COLUMNS = ["page", "sequence", "origin", "state", "reason", "review", "format", "size",
              "bytes", "content_hash"]  # fmt: skip
UI_SCHEMA = dg.TableSchema(
    columns=[
        dg.TableColumn(name, kind, description=text)
        for name in UI_COLUMNS
        for n, kind, text in COLUMNS
        if n == name
    ]  # fmt: skip
)

# Eager, for every month (Dagster's eager() looks at the latest month only): once the month's
# report_manifest is updated and its blocking checks passed, and not while either is running.
FOLLOWS_REPORT_MANIFEST = (
    dg.AutomationCondition.eager().without(dg.AutomationCondition.in_latest_time_window())
    & dg.AutomationCondition.all_deps_blocking_checks_passed()
).with_label("after each report_manifest update")


def _current_table(context: dg.AssetExecutionContext, store: Store) -> tuple[Manifest, str, bool]:
    """The table of the month's current revision (the one truth: core/model/current.py): its
    manifest, key and whether it was written here. In the month's run, publish_manifest tagged
    the run with the manifest it left current and the generation of the month's record that
    names it: that manifest is used if no later generation exists, asked beside its read (or,
    handed over in this process, beside the table's write: core/archive/table.py). A run
    without those tags reads the month."""
    run = context.instance.get_run_by_id(context.run.run_id)  # tagged during the run
    tags = run.tags if run is not None else {}
    generation = tags.get(MONTH_GENERATION_TAG, "")
    found = write_current_table(
        store,
        context.partition_key,
        tags.get(PUBLISHED_MANIFEST_TAG, ""),
        int(generation) if generation.isdigit() else 0,
    )
    if found is None:
        raise dg.Failure(f"nothing is archived for {context.partition_key}")
    return found


def ui_table(manifest: Manifest) -> dict[str, dg.MetadataValue]:
    """The rows (the first UI_ROWS) as a table, and a note on where the rest are."""
    shown = [
        dg.TableRecord({name: row[name] for name in UI_COLUMNS}
                       | {"content_hash": str(row["content_hash"])[:HASH_CHARS]})
        for row in rows(manifest)[:UI_ROWS]
    ]  # fmt: skip
    total = len(manifest.children)
    note = (
        f"all {total} rows"
        if total <= UI_ROWS
        else f"the first {UI_ROWS} of {total} rows; every row is in the CSV at table_key and "
        "in `report-pipeline show MONTH`"
    )
    return {"images": dg.MetadataValue.table(shown, UI_SCHEMA), "images_shown": note}


@dg.asset(
    partitions_def=monthly_partitions,
    deps=[report_manifest],
    group_name="reports",
    kinds={"pandas", "csv"},
    retry_policy=STORAGE_RETRY,  # like every op that does storage I/O (defs/reports/guard.py)
    hooks={retry_after_instance_outage},
    automation_condition=FOLLOWS_REPORT_MANIFEST,
)
def manifest_table(context: dg.AssetExecutionContext, store: StoreResource):
    """One row per image occurrence of the month's current revision: page, origin, state, quarantine
    reason, content hash, size (width x height), format and bytes. Written once per revision
    (a rerun of an unchanged report finds it and writes nothing); the rows are shown in the
    metadata's `images` table."""

    manifest, key, written = guarded(context, lambda: _current_table(context, store.get_store()))
    return dg.MaterializeResult(metadata=table_metadata(manifest, key, written))


def table_metadata(manifest: Manifest, key: str, written: bool) -> dict:
    """The table's materialization metadata: its schema, a row per occurrence, where it is."""
    return {
        "dagster/column_schema": SCHEMA,
        "dagster/row_count": len(manifest.children),  # a row per occurrence (archive/table.py)
        "month": manifest.month,
        "revision": manifest.parent_revision,
        "table_key": key,
        "written": written,
        **ui_table(manifest),
    }


manifest_table_sensor = dg.AutomationConditionSensorDefinition(
    "manifest_table_sensor",
    target=dg.AssetSelection.assets(manifest_table),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Builds manifest_table for every month whose report_manifest was updated "
    "without it (a UI launch or backfill of report_manifest alone).",
)

"""`image_archive`: the archive's retention state. Each materialization is one janitor pass
(`cleanup_job`, every 5 minutes on `cleanup_schedule`) with its figures; the whole-archive
retention checks (defs/retention/checks.py) belong to this asset, never to a month's partition."""

from collections import Counter

import dagster as dg

from report_pipeline.core.model import keys
from report_pipeline.core.model.wording import plural
from report_pipeline.core.retention import janitor
from report_pipeline.core.retention.deletion_log import Deletion
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import PipelineSettingsResource, StoreResource

TABLE_ROWS = 200
# every kind, so each plots as 0 too
KINDS = ("workdir", "working_material", "archive", "untracked_staged", "untracked_work",
         "untracked_archive", "partial_write", "superseded", "rejected_evidence")  # fmt: skip
_COLUMNS = [("kind", "string"), ("item", "string"), ("deadline", "string"),
            ("deleted_at", "string"), ("lag_seconds", "float"), ("bytes", "int")]  # fmt: skip


def _observation(event: Deletion) -> dg.AssetObservation | None:
    """Deletions of a report's material are shown on that month's partition of the asset."""
    month = keys.month_of(event.report_id)
    if not event.report_id or not monthly_partitions.has_partition_key(month):
        return None
    return dg.AssetObservation(
        asset_key="report_manifest",
        partition=month,
        description=f"retention: deleted {event.kind} of revision {event.revision}",
        metadata={"deletion": event.kind, "revision": event.revision, "deadline": event.deadline,
                  "deleted_at": event.deleted_at, "lag_seconds": event.lag_seconds,
                  "bytes": event.bytes, "objects": event.objects},
    )  # fmt: skip


def _table(deletions: list[Deletion]) -> dg.TableMetadataValue:
    rows = [dg.TableRecord({name: getattr(e, name) for name, _ in _COLUMNS}) for e in deletions]
    schema = dg.TableSchema(columns=[dg.TableColumn(n, t) for n, t in _COLUMNS])
    return dg.MetadataValue.table(rows[:TABLE_ROWS], schema)


@dg.asset(group_name="retention", kinds={"python"})
def image_archive(
    context: dg.AssetExecutionContext,
    store: StoreResource,
    settings: PipelineSettingsResource,
    clock: ClockResource,
):
    """The whole image archive's retention state, brought up to date by one janitor pass:
    delete every workdir, staged source, work object and archived revision whose deadline has
    passed (never under a live lease), one audit event per deletion, each also an observation
    on that month's partition of `report_manifest`. Idempotent: the next pass picks up whatever
    this one could not finish. Figures here are whole-archive figures."""
    worker = settings.settings()
    sweep = janitor.run(store.get_store(), worker.work_root, clock.now(), worker.retention)
    for event in sweep.deletions:
        if (observation := _observation(event)) is not None:
            yield observation
    kinds = Counter(e.kind for e in sweep.deletions)
    deleted = plural(len(sweep.deletions), "item")
    context.log.info(f"janitor deleted {deleted}, {plural(sweep.bytes_deleted, 'byte')}")
    lags = [max(0.0, e.lag_seconds) for e in sweep.deletions]
    yield dg.MaterializeResult(
        metadata={
            "deleted_items": len(sweep.deletions),
            "deleted_bytes": sweep.bytes_deleted,
            **{f"deleted_{kind}": kinds.get(kind, 0) for kind in KINDS},
            "max_cleanup_lag_seconds": max(lags, default=0.0),
            "buckets_opened": sweep.buckets_opened,
            "index_entries_due": sweep.entries_due,
            "deletions": _table(sweep.deletions),
        },
    )

"""The janitor as a Dagster job: `cleanup_job`, run by `cleanup_schedule` every few minutes."""

from collections import Counter

import dagster as dg

from report_pipeline.core import janitor
from report_pipeline.core.audit import Deletion
from report_pipeline.core.wording import plural
from report_pipeline.defs.clock import ClockResource
from report_pipeline.defs.partitions import monthly_partitions
from report_pipeline.defs.resources import StoreResource, WorkerResource

TABLE_ROWS = 200
_COLUMNS = [("kind", "string"), ("item", "string"), ("deadline", "string"),
            ("deleted_at", "string"), ("lag_seconds", "float"), ("bytes", "int")]  # fmt: skip


def _observation(event: Deletion) -> dg.AssetObservation | None:
    """Deletions of a report's material are shown on that month's partition of the asset."""
    month = event.report_id[-7:]
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


@dg.op
def janitor_pass(
    context: dg.OpExecutionContext,
    store: StoreResource,
    settings: WorkerResource,
    clock: ClockResource,
):
    """Delete every workdir, staged source, work object and archived revision whose deadline
    has passed (never under a live lease), one audit event per deletion. Idempotent: the next
    scheduled pass picks up whatever this one could not finish."""
    worker = settings.settings()
    sweep = janitor.run(store.get_store(), worker.work_root, clock.now(), worker.retention)
    for event in sweep.deletions:
        if (observation := _observation(event)) is not None:
            yield observation
    kinds = Counter(e.kind for e in sweep.deletions)
    deleted = plural(len(sweep.deletions), "item")
    context.log.info(f"janitor deleted {deleted}, {plural(sweep.bytes_deleted, 'byte')}")
    yield dg.Output(
        None,
        metadata={
            "deleted_items": len(sweep.deletions),
            "deleted_bytes": sweep.bytes_deleted,
            **{f"deleted_{kind}": n for kind, n in sorted(kinds.items())},
            "buckets_opened": sweep.buckets_opened,
            "index_entries_due": sweep.entries_due,
            "deletions": _table(sweep.deletions),
        },
    )


@dg.job(executor_def=dg.in_process_executor, tags={"report_pipeline/kind": "retention"})
def cleanup_job():
    """Enforce both retention clocks outside the happy path (the essay's janitor)."""
    janitor_pass()

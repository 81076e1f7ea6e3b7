"""`new_report_sensor`: every configured source, watched; one run per new report revision."""

from __future__ import annotations

import time

import dagster as dg

from report_pipeline.core.intake import claims, month_report, watch
from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.submission import REVISION_TAG, admit
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.model.wording import plural
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.deployment.partitions import monthly_partitions
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    PipelineSettingsResource,
    StoreResource,
)
from report_pipeline.defs.reports.claiming import runs_of, unresolved_run
from report_pipeline.defs.reports.jobs import extract_report_job
from report_pipeline.defs.reports.ops import stage_report_run_config

MINIMUM_INTERVAL_SECONDS = 30
# Reports admitted (streamed, hashed, checked) per tick: keeps a tick of a large backlog well
# inside Dagster's sensor timeout (60 s); the rest are read on the following ticks.
MAX_READS_PER_TICK = 10
# Bytes hashed per tick to learn which content files hold (a month's first look reads every
# file once). Checked between months, so no month's look is cut in two; the rest wait a tick.
MAX_BYTES_HASHED_PER_TICK = 256 * 1024 * 1024


def _consider(
    context: dg.SensorEvaluationContext, change: watch.Change, cursor: watch.Cursor,
    settings: PipelineSettings, store: Store, primary: str,
) -> dg.RunRequest | str:  # fmt: skip
    """A run request for the month's new report, or why there is none."""
    where = watch.where(change.entry)
    # A UI launch or backfill of the month will stage this report: it claims it, not the sensor.
    pending = change.source.name == primary and unresolved_run(context.instance, change.month)
    if pending:
        watch.defer(cursor, change)
        return f"{where}: run {pending} has not read its report yet; looking again next tick"
    try:
        admission = admit(change.source, change.entry.ref, change.month, settings, "intake/sensor")
    except RefusedInput as refused:
        watch.record(cursor, change, refused=refused.code)
        context.log.warning(f"{where}: refused ({refused.code}): {refused.message}")
        return f"{where}: refused ({refused.code}): {refused.message}"
    if admission.source_hash != change.sha256:
        watch.defer(cursor, change)
        return f"{where}: changed while it was read; looking again next tick"
    if not watch.record(cursor, change, source_hash=admission.source_hash):
        return f"{where}: same bytes as revision {admission.revision}; nothing new"
    runs = context.instance.get_runs(
        filters=dg.RunsFilter(tags={REVISION_TAG: admission.revision}), limit=1
    )
    if runs:
        return f"{where}: revision {admission.revision} already has run {runs[0].run_id}"
    claim = claims.acquire(store, admission.revision, "sensor", runs_of(context.instance))
    if not claim.won:  # `submit` or a UI launch got there first
        return f"{where}: {claim.describe()}"
    pages = plural(admission.pages, "page")
    context.log.info(f"{where}: new revision {admission.revision} ({pages})")
    return dg.RunRequest(
        run_key=admission.revision,
        partition_key=change.month,
        run_config=stage_report_run_config(admission.stage_config()),
        tags={**admission.tags(), claims.CLAIM_TAG: claim.claim.token},
    )


def _changes(
    inbox: InboxResource, store: Store, settings: PipelineSettings, cursor: watch.Cursor, now: int,
    sweep: bool, notes: list[str],
) -> list[watch.Change]:  # fmt: skip
    """Each changed month decided by the one rule, what it read recorded in the month's ledger;
    the months whose report the cursor has not considered."""
    sources = inbox.report_sources()
    settle_ns = inbox.settle_seconds * 1_000_000_000
    listings = watch.changed_months(
        sources, cursor, now, settle_ns, sweep, monthly_partitions.has_partition_key, notes
    )
    changes = []
    with month_report.reader(sources, settings, "intake/sensor") as read:
        looks = watch.BudgetedLooks(store, read, MAX_BYTES_HASHED_PER_TICK, now)
        for listing in listings:
            decision = looks.look(listing, notes)
            change = decision and watch.judge(cursor, listing, decision, sweep, notes)
            if change:
                changes.append(change)
        looks.note_waiting(notes)
    return changes


def build_new_report_sensor(
    minimum_interval_seconds: int = MINIMUM_INTERVAL_SECONDS,
) -> dg.SensorDefinition:
    """The sensor, with another interval for tests that drive a real daemon."""

    def new_report_sensor(
        context: dg.SensorEvaluationContext, inbox: InboxResource, store: StoreResource,
        settings: PipelineSettingsResource,
    ) -> dg.SensorResult:  # fmt: skip
        """Watches every configured report source. Each month's report is the file whose
        content arrived last (a new sha256, not a newer mtime; docs/intake.md). A new one is
        authorized and checked against the input limits (bytes, %PDF, pages, encryption)
        before anything runs, then requested as that month's partition with the revision as
        run key. Identical bytes, under any name, start nothing; refusals and files that are
        not the month's report are reported on the tick, by their name within the month folder.
        Every tick lists each month's files; one whose files did not change reads nothing."""
        cursor, now = watch.Cursor.loads(context.cursor), time.time_ns()
        sweep = cursor.sweep_due(now)
        notes: list[str] = []
        requests: list[dg.RunRequest] = []
        worker, claim_store = settings.settings(), store.get_store()
        changes = _changes(inbox, claim_store, worker, cursor, now, sweep, notes)
        for change in changes[:MAX_READS_PER_TICK]:
            outcome = _consider(context, change, cursor, worker, claim_store, inbox.name)
            if isinstance(outcome, dg.RunRequest):
                requests.append(outcome)
            else:
                notes.append(outcome)
        for change in changes[MAX_READS_PER_TICK:]:
            watch.defer(cursor, change)
        if len(changes) > MAX_READS_PER_TICK:
            more = len(changes) - MAX_READS_PER_TICK
            verb = "waits" if more == 1 else "wait"
            waiting = f"{plural(more, 'more report', 'more reports')} {verb} for the next tick"
            context.log.info(waiting)
            notes.append(waiting)
        if sweep:
            cursor.swept_ns = now
        if requests:
            if notes:  # no skip reason shows them
                context.log.info("; ".join(notes))
            return dg.SensorResult(run_requests=requests, cursor=cursor.dumps())
        reason = "; ".join(notes) or "no new or changed reports"
        return dg.SensorResult(skip_reason=dg.SkipReason(reason), cursor=cursor.dumps())

    return dg.sensor(
        name="new_report_sensor",
        job=extract_report_job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=" ".join((new_report_sensor.__doc__ or "").split()),
    )(new_report_sensor)


new_report_sensor = build_new_report_sensor()

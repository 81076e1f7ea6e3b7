"""The quarantine review in Dagster: `quarantine_review_job` takes one decision from the
Launchpad (the same as `report-pipeline quarantine decide`), and `quarantine_review_sensor`
re-evaluates each archived month's `quarantine_reviewed` check daily, as items age past the
review deadline without a decision. Both record on the month's partition."""

import json

import dagster as dg
from pydantic import Field

from report_pipeline.core.archive.months import latest_archived
from report_pipeline.core.checks import month_checks
from report_pipeline.core.model.keys import manifest_key
from report_pipeline.core.review.decide import Decided, decide
from report_pipeline.core.review.pages import decide_page
from report_pipeline.core.review.queue import ReviewError, archived_months
from report_pipeline.defs.deployment.check_settings import CheckSettingsResource
from report_pipeline.defs.deployment.clock_resource import ClockResource
from report_pipeline.defs.deployment.resources import PipelineSettingsResource, StoreResource
from report_pipeline.defs.reports.current_revision import month_events
from report_pipeline.defs.reports.month_checks import ASSET, check_evaluation

REVIEW_CHECK = "quarantine_reviewed"


class ReviewDecision(dg.Config):
    """One decision, as `report-pipeline quarantine decide` takes it (see docs/review.md)."""

    month: str = Field(description="the month, YYYY-MM")
    sequence: int = Field(0, description="the image's sequence, from `quarantine list`")
    page: int = Field(0, description="or a damaged page's number (then leave sequence 0)")
    decision: str = Field(description="accept or reject")
    reviewer: str = Field(description="who decides: a name, any script, no spaces")
    note: str = Field("", description="why: one line, at most 500 characters")
    revision: str = Field("", description="the revision listed; refused if it changed since")


@dg.op(
    description="Record a reviewer's decision on one quarantined image, or one damaged page: "
    "a new revision."
)
def decide_quarantined_image(
    context: dg.OpExecutionContext, config: ReviewDecision, store: StoreResource,
    settings: PipelineSettingsResource, checks: CheckSettingsResource, clock: ClockResource,
) -> None:  # fmt: skip
    backend, worker, now = store.get_store(), settings.settings(), clock.now()
    try:
        done = _decided(backend, config, worker, now)
    except ReviewError as refused:
        raise refusal(refused, config) from None  # the ReviewError is not chained under it
    summary = {"decision": done.decision, "revision": done.revision, "changed": done.changed,
               "previous_revision": done.previous_revision, "sequence": done.sequence,
               "page": done.page, "reason": done.reason}  # fmt: skip
    item = f"page {done.page}" if done.page else f"image {done.sequence}"
    context.log.info(f"{item} of {config.month}: {json.dumps(summary)}")
    manifest = done.manifest  # the month's revision now
    if manifest is not None and done.changed:  # both assets now show the new revision
        key = manifest_key(manifest.report_id, manifest.parent_revision)
        why = f"{item} {done.decision} by {config.reviewer}"
        for event in month_events(backend, manifest, key, checks.thresholds(), now, why):
            context.log_event(event)
    else:  # nothing changed: the decision's outcome, on the month's partition
        context.log_event(dg.AssetObservation(
            asset_key=ASSET, partition=config.month, metadata=summary,
            description=f"quarantine review: {item} {done.decision}",
        ))  # fmt: skip
    if done.decision == "accept_failed":
        raise dg.Failure(f"still quarantined: {done.reason}", metadata=summary)


def _decided(backend, config: ReviewDecision, worker, now) -> Decided:
    """The decision on an image (`sequence`) or a damaged page (`page`): exactly one named."""
    if bool(config.sequence) == bool(config.page):
        raise ReviewError("bad_input", "name one item: an image's sequence, or a page")
    if config.page:
        return decide_page(backend, config.month, config.page, config.decision, config.reviewer,
                           config.note, now, worker.review, config.revision)  # fmt: skip
    return decide(
        backend, config.month, config.sequence, config.decision, config.reviewer,
        config.note, now, worker.review, worker.decode, config.revision,
    )  # fmt: skip


def refusal(refused: ReviewError, config: ReviewDecision) -> dg.Failure:
    """A decision the review refuses, as the Launchpad user reads it: one line (what the shell
    prints) and its facts as metadata. Not retried: the same request is refused again."""
    return dg.Failure(
        description=f"refused ({refused.code}): {refused.message}",
        metadata={
            "code": refused.code,
            "month": config.month,
            "sequence": config.sequence,
            "page": config.page,
        },
        allow_retries=False,
    )


@dg.job(description="One quarantine decision from the Launchpad: month, sequence (or page), "
        "accept or reject, reviewer and note (docs/review.md). No shell needed.")  # fmt: skip
def quarantine_review_job():
    decide_quarantined_image()


@dg.sensor(
    minimum_interval_seconds=24 * 3600,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Daily: re-evaluates quarantine_reviewed on every archived month whose result "
    "changed (items aging past checks.review_days, or decided). Starts no runs.",
)
def quarantine_review_sensor(
    context: dg.SensorEvaluationContext, store: StoreResource, checks: CheckSettingsResource,
    clock: ClockResource,
):  # fmt: skip
    backend, limits, now = store.get_store(), checks.thresholds(), clock.now()
    last = json.loads(context.cursor) if context.cursor else {}
    events = []
    for month in archived_months(backend):
        found = latest_archived(backend, month)
        if found is None:
            continue
        outcome = month_checks.quarantine_reviewed(found[1], now, limits)
        state = f"{found[1].parent_revision}:{outcome.passed}"
        if last.get(month) != state:
            last[month] = state
            events.append(check_evaluation(outcome, month))
    cursor = json.dumps(last, sort_keys=True)
    if not events:
        return dg.SensorResult(skip_reason="no month's review state changed", cursor=cursor)
    return dg.SensorResult(asset_events=events, cursor=cursor)

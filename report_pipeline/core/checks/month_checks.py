"""Per-month checks: one month's published revision, judged from its manifest and the store.

Every figure here covers that one revision, never the whole archive, so a plot across monthly
partitions compares like with like. Thresholds come from the caller (Dagster settings).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from report_pipeline.core.archive.manifest import damaged_pages
from report_pipeline.core.archive.months import ARCHIVED_STATES, month_manifests
from report_pipeline.core.checks.check_outcome import CheckOutcome
from report_pipeline.core.checks.pages import pages_drawn_whole
from report_pipeline.core.checks.revision_audit import compared, verify_revision
from report_pipeline.core.model.clock import iso, parse_iso
from report_pipeline.core.model.keys import archive_prefix
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.storage.parallel_io import together
from report_pipeline.core.storage.store import Store


@dataclass(frozen=True)
class Thresholds:
    min_first_attempt_pct: float = 99.0
    max_quarantine_pct: float = 1.0
    max_queue_age_p95_seconds: float = 600.0
    due_day: int = 5  # a month's report is due archived by the end of this day of the next month
    review_days: int = 30  # a quarantined image undecided longer than this: quarantine_reviewed


def _scope(manifest: Manifest) -> dict[str, Any]:
    return {"month": manifest.month, "revision": manifest.parent_revision}


def manifest_complete(manifest: Manifest) -> CheckOutcome:
    """archived + quarantined + hidden = expected, and every page has its row: a damaged page (a
    content stream broke off) is accounted for by its own row (`pages_drawn_whole` names it)."""
    counts = manifest.counts
    passed = manifest.state in ARCHIVED_STATES
    damaged = len(damaged_pages(manifest))
    text = "every image accounted for" if passed else "some images are unaccounted for"
    if passed and damaged:
        text += f"; {damaged} damaged page(s) accounted for by their own rows"
    keys = ("expected", "accounted", "archived", "quarantined", "hidden", "pages_unaccounted")
    return CheckOutcome(
        "manifest_complete", passed, text,
        {**_scope(manifest), **{k: getattr(counts, k) for k in keys}, "damaged_pages": damaged},
    )  # fmt: skip


def archive_matches_manifest(store: Store, manifest: Manifest) -> CheckOutcome:
    """Every object the revision's manifest lists exists with its bytes; nothing is unlisted.
    On S3 an object is matched by its listed ETag and size against the MD5 and size recorded
    at upload; otherwise (and whenever they disagree) its bytes are read and hashed
    (`revision_audit.verify_revision`). The metadata says how many objects went each way."""
    tally: dict[str, Any] = {"missing": [], "mismatched": [], "orphans": [],
                             "objects_verified": 0, "bytes_verified": 0}  # fmt: skip
    prefix = archive_prefix(manifest.report_id, manifest.parent_revision)
    verify_revision(store, prefix, manifest, tally)
    bad = tally["missing"] + tally["mismatched"] + tally["orphans"]
    return CheckOutcome(
        "archive_matches_manifest", not bad,
        "archive and manifest agree" if not bad else "archive and manifest disagree",
        {**_scope(manifest), "objects_verified": tally["objects_verified"],
         "bytes_verified": tally["bytes_verified"], "missing_objects": len(tally["missing"]),
         "hash_mismatches": len(tally["mismatched"]), "orphan_objects": len(tally["orphans"]),
         "first_problem": bad[0] if bad else "", **compared(tally)},
    )  # fmt: skip


def first_attempt_validation(manifest: Manifest, limits: Thresholds) -> CheckOutcome:
    """Share of image occurrences whose final outcome (archived or quarantined) came on the
    first attempt. It falls only when work was retried or redelivered;
    bad input is `quarantine_rate`'s business."""
    pct = float(manifest.metrics.validated_first_attempt_pct)
    passed = pct >= limits.min_first_attempt_pct
    return CheckOutcome(
        "first_attempt_validation", passed,
        f"{pct}% settled on the first attempt (threshold {limits.min_first_attempt_pct}%)",
        {**_scope(manifest), "validated_first_attempt_pct": pct,
         "threshold_pct": limits.min_first_attempt_pct, "images": manifest.counts.accounted},
    )  # fmt: skip


def validated(manifest: Manifest) -> int:
    """The occurrences validated (archived or quarantined): not those left hidden, unread."""
    return manifest.counts.accounted - manifest.counts.hidden


def quarantined_pct(manifest: Manifest) -> float:
    """Share of the revision's validated image occurrences quarantined (0.0 for none)."""
    images = validated(manifest)
    return round(100 * manifest.counts.quarantined / images, 2) if images else 0.0


def quarantine_rate(manifest: Manifest, limits: Thresholds) -> CheckOutcome:
    """Share of image occurrences quarantined for bad bytes, WARN above the threshold: the
    report's own problem, which no retry changes."""
    pct = quarantined_pct(manifest)
    passed = pct <= limits.max_quarantine_pct
    return CheckOutcome(
        "quarantine_rate", passed,
        f"{pct}% of image occurrences quarantined (threshold {limits.max_quarantine_pct}%)",
        {**_scope(manifest), "quarantined_pct": pct, "threshold_pct": limits.max_quarantine_pct,
         "quarantined": manifest.counts.quarantined, "images": validated(manifest)},
    )  # fmt: skip


def queue_age_p95(manifest: Manifest, limits: Thresholds) -> CheckOutcome:
    """The p95 age of a queued child task when its work started."""
    age = float(manifest.metrics.queue_age_p95_seconds)
    passed = age <= limits.max_queue_age_p95_seconds
    return CheckOutcome(
        "queue_age_p95", passed,
        f"p95 queued child age {age} s (threshold {limits.max_queue_age_p95_seconds} s)",
        {**_scope(manifest), "queue_age_p95_seconds": age,
         "threshold_seconds": limits.max_queue_age_p95_seconds,
         "decode_peak_rss_mib": round(manifest.metrics.peak_rss_kib / 1024, 1)},
    )  # fmt: skip


def due_at(month: str, due_day: int) -> datetime:
    """When a month's report is overdue: the end of day `due_day` of the next month (UTC)."""
    year, number = (int(part) for part in month.split("-"))
    first_of_next = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
    return first_of_next + timedelta(days=due_day)


def archived_on_time(
    month: str, archived_at: datetime | None, now: datetime, limits: Thresholds
) -> CheckOutcome:
    """Passes when the month's report was archived (first, at `archived_at`) by its due time,
    or is not archived and not due yet; warns when it was archived late, and when it is overdue
    and not archived. `hours_before_due` (due time minus archive time, or minus now) is
    negative when late."""
    deadline = due_at(month, limits.due_day)
    if archived_at is not None:
        passed = archived_at <= deadline
        text = "report archived by its due time" if passed else "report archived late"
    else:
        passed = now < deadline
        text = (
            "no archived report yet; not due"
            if passed
            else f"no report archived for {month}: overdue"
        )
    return CheckOutcome(
        "report_archived_on_time", passed, text,
        {"month": month, "archived": archived_at is not None, "due_by": iso(deadline),
         "hours_before_due": round((deadline - (archived_at or now)).total_seconds() / 3600, 1)},
    )  # fmt: skip


def first_archived_at(store: Store, month: str, known: Manifest | None = None) -> datetime | None:
    """When the month's first revision still on record was archived (None: none archived):
    a corrected report archived later does not make a month that was on time late. `known`:
    a manifest of the month the caller holds, not read again."""
    besides = known.parent_revision if known is not None else ""
    reports = (known.report_id,) if known is not None else ()
    manifests = [m for _, m in month_manifests(store, month, besides, reports=reports)]
    manifests += [known] * bool(known)
    times = [parse_iso(m.created_at) for m in manifests if m.state in ARCHIVED_STATES]
    return min(times, default=None)


def is_archived(store: Store, month: str) -> bool:
    """The month has at least one archived (complete, or since expired) revision in the store."""
    return any(m.state in ARCHIVED_STATES for _, m in month_manifests(store, month))


def due_months(months: list[str], now: datetime, due_day: int) -> list[str]:
    """The months whose report is due by `now`, oldest first."""
    return [m for m in months if due_at(m, due_day) <= now]


REVISION_CHECKS = ("manifest_complete", "archive_matches_manifest", "first_attempt_validation",
                   "quarantine_rate", "queue_age_p95", "quarantine_reviewed",
                   "pages_drawn_whole")  # fmt: skip


def without_report(month: str, now: datetime, limits: Thresholds) -> list[CheckOutcome]:
    """A month with no report and nothing archived: there is no revision to account for or
    verify, so each revision check passes and says why; whether that is late is
    `report_archived_on_time`'s call (WARN once the month is due)."""
    vacuous = [
        CheckOutcome(name, True, f"no report for {month}: no revision to check",
                     {"month": month, "no_report": True})
        for name in REVISION_CHECKS
    ]  # fmt: skip
    return [*vacuous, archived_on_time(month, None, now, limits)]


def quarantine_reviewed(manifest: Manifest, now: datetime, limits: Thresholds) -> CheckOutcome:
    """Every quarantined image of the revision has a reviewer's decision, or has waited no
    longer than `review_days` since it was quarantined (core/review/)."""
    undecided = [c for c in manifest.children if c.state == "quarantined" and not c.review]
    overdue = [c for c in undecided
               if (now - parse_iso(c.finished_at)).days >= limits.review_days]  # fmt: skip
    decided = sum(1 for c in manifest.children if c.review)
    days = limits.review_days
    text = (f"{len(overdue)} quarantined image(s) undecided for over {days} days" if overdue
            else f"{len(undecided)} undecided, none past {days} days")  # fmt: skip
    return CheckOutcome(
        "quarantine_reviewed", not overdue, text,
        {**_scope(manifest), "undecided": len(undecided), "overdue": len(overdue),
         "decided": decided, "review_days": limits.review_days,
         "overdue_sequences": ", ".join(str(c.sequence) for c in overdue[:20])},
    )  # fmt: skip


def month_outcomes(
    store: Store, manifest: Manifest, limits: Thresholds, now: datetime
) -> list[CheckOutcome]:
    """Every per-month check on a revision's manifest (figures of that revision only; on time
    from the month's first archived revision)."""
    archived_at, matches = together(
        store,
        lambda: first_archived_at(store, manifest.month, manifest),
        lambda: archive_matches_manifest(store, manifest),
    )  # fmt: skip
    return [
        manifest_complete(manifest),
        matches,
        first_attempt_validation(manifest, limits),
        quarantine_rate(manifest, limits),
        queue_age_p95(manifest, limits),
        archived_on_time(manifest.month, archived_at, now, limits),
        quarantine_reviewed(manifest, now, limits),
        pages_drawn_whole(manifest),
    ]

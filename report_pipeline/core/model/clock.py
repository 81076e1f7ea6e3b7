"""The two clocks' deadlines (the clocks themselves, `RetentionPolicy`, are in settings.py).

Deadlines are computed once, when a revision is first archived, and then only read: a retry or a
rerun reuses the recorded values and can never extend them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from report_pipeline.core.model.settings import RetentionPolicy


@dataclass(frozen=True)
class Deadlines:
    work_delete_by: str  # ISO 8601, UTC
    archive_delete_by: str


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def deadlines_for(archived_at: datetime, policy: RetentionPolicy) -> Deadlines:
    return Deadlines(
        work_delete_by=iso(archived_at + timedelta(minutes=policy.work_minutes)),
        archive_delete_by=iso(archived_at + timedelta(days=policy.archive_days)),
    )

"""The two clocks: a short one for working material and a long one for the archive.

Deadlines are computed once, when a revision is first archived, and then only read: a retry or a
rerun reuses the recorded values and can never extend them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class RetentionPolicy:
    work_minutes: int = 15
    archive_days: int = 400
    # The longest a run may hold its working material; past it (plus the short clock) the
    # janitor removes what an unfinished revision left, and that revision must be rerun.
    lease_minutes: int = 60

    def __post_init__(self) -> None:
        if self.work_minutes <= 0 or self.archive_days <= 0 or self.lease_minutes <= 0:
            raise ValueError("retention periods must be positive")

    @property
    def unfinished_hold(self) -> timedelta:
        """How long a revision's working material may be in use by a run: lease + short clock."""
        return timedelta(minutes=self.lease_minutes + self.work_minutes)


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

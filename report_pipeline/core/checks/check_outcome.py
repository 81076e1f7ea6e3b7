"""What a retention or archive check reports, shared by the whole-archive checks
(retention_audit.py) and the per-revision ones (revision_audit.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from report_pipeline.core.model.clock import iso

DEFAULT_GRACE = timedelta(minutes=10)


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Overdue:
    items: list[tuple[str, datetime, int]] = field(default_factory=list)

    def add(self, item: str, deadline: datetime, size: int) -> None:
        self.items.append((item, deadline, size))

    def metadata(self) -> dict[str, Any]:
        oldest = min(self.items, key=lambda i: i[1], default=None)
        return {
            "overdue_items": len(self.items),
            "overdue_bytes": sum(i[2] for i in self.items),
            "oldest_overdue_item": oldest[0] if oldest else "",
            "oldest_overdue_deadline": iso(oldest[1]) if oldest else "",
        }

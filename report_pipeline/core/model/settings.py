"""The worker's settings: limits, clocks, task sizing and decoder isolation, one frozen dataclass
each, with the defaults the embedded deployment runs on.

Standard library only, so the retention side (janitor, audits) can read its clocks without
importing the PDF stack. `defs/deployment/resources.py` turns resource fields into these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

# Raised by one whenever extraction produces something else for the same bytes; what each
# version changed: docs/develop.md ("What each extractor version changed").
EXTRACTOR_VERSION = "15"


@dataclass(frozen=True)
class Limits:
    max_report_bytes: int = 256 * 1024 * 1024
    max_pages: int = 2000
    max_image_stream_bytes: int = 32 * 1024 * 1024
    max_image_pixels: int = 64_000_000
    max_image_side: int = 20_000
    refuse_repaired: bool = False  # True: a PDF MuPDF opens only by repairing it is `damaged`
    # True: a PDF encrypted with an empty user password (it opens without one, as in every
    # viewer; only its permission flags differ) is refused as `encrypted` too
    refuse_encrypted: bool = False
    # True: images a viewer does not show (optional content that is off, hidden or NoView
    # annotations: core/draws/visibility.py) are decoded and archived like the rest, each
    # record still saying why it is hidden; False: they are records of state `hidden`, never read
    archive_hidden: bool = False


@dataclass(frozen=True)
class RetentionPolicy:
    """The two clocks: a short one for working material and a long one for the archive."""

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


# Estimated work per task (core/plan/sizing.py: a unit is ~0.02 s of plain-loop work), per
# executor, so a step's fixed cost stays a small share of its work; k8s is an estimate, not
# measured here. Why these: docs/performance.md ("On Celery workers"), bench/HISTORY.md.
TARGET_UNITS = {"in_process": 400.0, "celery": 1000.0, "k8s": 3000.0}


@dataclass(frozen=True)
class TaskSizing:
    """Which pages go into one child task (core/plan/sizing.py): a fixed number when
    `pages_per_task` > 0, else groups of about `target_units` of estimated work, which
    depends on the executor (`for_executor`; in-process: ~8 s)."""

    pages_per_task: int = 0
    target_units: float = TARGET_UNITS["in_process"]

    @classmethod
    def for_executor(cls, executor: str, pages_per_task: int = 0) -> TaskSizing:
        if executor not in TARGET_UNITS:
            raise ValueError(f"no task sizing for executor {executor!r}: {sorted(TARGET_UNITS)}")
        return cls(pages_per_task, TARGET_UNITS[executor])


@dataclass(frozen=True)
class DecodeSettings:
    processes: int = 0  # pool size; 0: one per core
    memory_bytes: int = 1536 * 1024 * 1024
    # Wall time one image may take: `image_floor_seconds` plus `seconds_per_megapixel` of its
    # declared size, at most `image_seconds`, so a small image cannot burn minutes.
    image_seconds: float = 120.0
    image_floor_seconds: float = 10.0
    seconds_per_megapixel: float = 1.0
    report_cpu_seconds: float = 1800.0  # CPU a whole report may take, shared out to its tasks
    min_task_cpu_seconds: float = 60.0  # the least a task gets, whatever its share
    # Finding every page's images for planning (core/plan/walk.py), in confined children
    # (one per decoder, each a run of pages) with `memory_bytes` each: their CPU, summed, and
    # wall time for the whole report.
    walk_cpu_seconds: float = 60.0
    walk_seconds: float = 120.0

    def pool_size(self) -> int:
        return self.processes or os.cpu_count() or 1

    def image_budget(self, width: int, height: int) -> float:
        """Wall seconds one image of this declared size may take to decode."""
        pixels = max(0, width) * max(0, height)
        scaled = self.image_floor_seconds + self.seconds_per_megapixel * pixels / 1e6
        return min(self.image_seconds, scaled)


@dataclass(frozen=True)
class PipelineSettings:
    work_root: Path
    limits: Limits = field(default_factory=Limits)
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    extractor_version: str = EXTRACTOR_VERSION
    decode: DecodeSettings = field(default_factory=DecodeSettings)
    review: ReviewSettings = field(default_factory=lambda: ReviewSettings())


@dataclass(frozen=True)
class ReviewSettings:
    """The quarantine review (core/review/): how far an accepted image's failed check may be
    lifted, and what a reviewer's preview and note may be (how long items may wait for a
    decision is the checks' `review_days`)."""

    # Accept lifts the one check an image failed, for that image alone, up to these ceilings
    # (above them it stays quarantined: `pixel_cap_exceeded` etc. with the ceiling named).
    max_image_pixels: int = 150_000_000
    max_image_side: int = 40_000
    max_image_stream_bytes: int = 128 * 1024 * 1024
    preview_side: int = 2048  # `quarantine show`'s preview PNG is scaled to fit this square
    note_chars: int = 500
    # Evidence of a rejected image is deleted this many days after the decision, when that is
    # before the month's archive deadline; 0: it keeps the archive clock like the rest
    rejected_evidence_days: int = 0

    def __post_init__(self) -> None:
        if min(self.max_image_pixels, self.max_image_side, self.max_image_stream_bytes,
               self.preview_side, self.note_chars) <= 0:  # fmt: skip
            raise ValueError("review limits must be positive")
        if self.rejected_evidence_days < 0:
            raise ValueError("rejected_evidence_days must be 0 (the archive clock) or more")

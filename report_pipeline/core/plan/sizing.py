"""Task granularity: which pages go into one child task.

A Dagster step costs ~0.1-0.2 s on the embedded instance, more than one page's work, and about
0.6 s more on a Celery worker, so pages are grouped until a task holds enough work to pay for its
steps: about `target_units` of estimated work, a per-executor setting (core/model/settings.py
TARGET_UNITS). The per-page record is unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from report_pipeline.core.model.settings import TaskSizing

# Work units: declared megapixels plus a fixed cost per image (open, hash, write). Fitted on
# this 2-core machine from the monthly fixture, reference/chelsea_pdta.pdf and the 4800x3600
# fixture: ~0.02 s per megapixel and ~0.0017 s per image, so an image costs ~0.1 MP and one
# unit is ~0.02 s. The in-process target (settings.TaskSizing: 400 units, ~8 s of work) keeps
# each task's two steps (~0.15 s on the sqlite instance) under ~2% of its work; Celery's is
# larger (settings.TARGET_UNITS says why).
IMAGE_COST_MP = 0.1


@dataclass(frozen=True)
class PageGroup:
    first_page: int
    last_page: int
    images: int

    @property
    def key(self) -> str:
        if self.first_page == self.last_page:
            return f"page_{self.first_page:04d}"
        return f"pages_{self.first_page:04d}_{self.last_page:04d}"


def page_cost(images: int, pixels: int) -> float:
    return pixels / 1e6 + images * IMAGE_COST_MP


def group_pages(
    counts: list[tuple[int, int]],
    pages_per_task: int = TaskSizing.pages_per_task,
    target_units: float = TaskSizing.target_units,
) -> list[PageGroup]:
    """Contiguous groups: fixed size when `pages_per_task` > 0, else by estimated work: as many
    groups as `target_units` fits into the report's work, rounded up, each holding about the
    same share (a report of 1.2 targets is two halves, not a full task and a scrap, so workers
    that run its groups side by side finish together)."""
    costs = [page_cost(count, pixels) for count, pixels in counts]
    if pages_per_task <= 0:
        total = sum(costs)
        share = total / max(1, math.ceil(total / target_units)) if total else 0.0
    groups: list[PageGroup] = []
    first, images, units, done = 1, 0, 0.0, 0.0
    for page, (count, _pixels) in enumerate(counts, start=1):
        images += count
        units += costs[page - 1]
        if pages_per_task > 0:
            full = page - first + 1 >= pages_per_task
        else:  # the group ends where the report's running work reaches its next share
            full = share > 0 and done + units >= (len(groups) + 1) * share * (1 - 1e-9)
        if full or page == len(counts):
            groups.append(PageGroup(first, page, images))
            first, images, done, units = page + 1, 0, done + units, 0.0
    return groups

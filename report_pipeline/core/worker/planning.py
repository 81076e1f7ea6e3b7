"""Task granularity: which pages go into one child task.

A Dagster step costs ~0.1-0.2 s on the embedded instance, more than one page's work, so pages are
grouped until a task holds enough work to pay for its steps. The per-page record is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from report_pipeline.core.settings import TaskSizing

# Work units: declared megapixels plus a fixed cost per image (open, hash, write). Fitted on
# this 2-core machine from the monthly fixture, reference/chelsea_pdta.pdf and the 4800x3600
# fixture: ~0.02 s per megapixel and ~0.0017 s per image, so an image costs ~0.1 MP and one
# unit is ~0.02 s. The default target (settings.TaskSizing: 400 units, ~8 s of work) keeps each
# task's two steps (~0.15 s on the sqlite instance) under ~2% of its work.
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
    """Contiguous groups: fixed size when `pages_per_task` > 0, else by estimated work."""
    groups: list[PageGroup] = []
    first, images, units = 1, 0, 0.0
    for page, (count, pixels) in enumerate(counts, start=1):
        images += count
        units += page_cost(count, pixels)
        full = page - first + 1 >= pages_per_task if pages_per_task > 0 else units >= target_units
        if full or page == len(counts):
            groups.append(PageGroup(first, page, images))
            first, images, units = page + 1, 0, 0.0
    return groups

"""A revision's plan in the store (plan.json): its page-group tasks, each with its CPU budget,
the images expected per page, and when it was queued. Written once at staging; read by the
manifest step to find planned tasks a re-execution left out, and by the retention audit.

Beside it, as working material (work/<revision>/draws.json), every page's image draws as the
planning walk found them: the decoders take them from there instead of interpreting each page a
second time (core/pdf/pages.py `page_images`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from report_pipeline.core.model import handover, keys, store_json
from report_pipeline.core.model.clock import iso, utc_now
from report_pipeline.core.model.messages import PageTask, RevisionRef
from report_pipeline.core.model.records import PageStreams
from report_pipeline.core.model.settings import DecodeSettings
from report_pipeline.core.pdf.pages import Draws, compact, expand
from report_pipeline.core.plan.record import Plan, write_plan
from report_pipeline.core.plan.sizing import group_pages, page_cost
from report_pipeline.core.storage.parallel_io import together
from report_pipeline.core.storage.store import MissingObject, Store


def budget(share: float, decode: DecodeSettings) -> float:
    """A task's CPU budget: its share of the report's estimated work, with a floor so that a
    small task is not stopped by noise."""
    return max(decode.min_task_cpu_seconds, share * decode.report_cpu_seconds)


def plan(
    store: Store, ref: RevisionRef, counts: list[tuple[int, int]], pages_per_task: int,
    target_units: float, decode: DecodeSettings, streams: dict[int, PageStreams] | None = None,
    unread: dict[int, tuple[int, int]] | None = None,
    draws: list[Draws] | None = None,
    alongside: Sequence[Callable[[], object]] = (),
    source: Path | None = None,
) -> list[PageTask]:  # fmt: skip
    """The revision's tasks, and its plan in the store: the images expected per page (an inline
    image MuPDF never reads counts: it is recorded, `unread`), and the pages whose content
    streams broke off (damaged) or were repaired (`streams`). With `draws`, every page's
    draws are written beside it (a task whose draws are missing walks its pages again,
    `read_draws`); `alongside`: other calls made beside them (one wait on S3), all done when
    this returns. `source`: the staged source's local copy, handed over with the draws to the
    plan's extractions when they run in this process (core/model/handover.py)."""
    queued_at = iso(utc_now())
    unread = unread or {}
    counts = [(images + unread.get(page, (0, 0))[0], pixels)
              for page, (images, pixels) in enumerate(counts, start=1)]  # fmt: skip
    groups = group_pages(counts, pages_per_task, target_units)
    units = [page_cost(*count) for count in counts]
    total = sum(units) or 1.0
    tasks = [
        PageTask(ref, g.key, g.first_page, g.last_page, g.images, queued_at,
                 budget(sum(units[g.first_page - 1 : g.last_page]) / total, decode),
                 tuple((p, n, whole) for p, (n, whole) in sorted(unread.items())
                       if g.first_page <= p <= g.last_page))
        for g in groups
    ]  # fmt: skip
    expected = {page: count for page, (count, _) in enumerate(counts, start=1)}
    record = Plan(expected, streams or {}, queued_at, tuple(tasks))
    drawn: list[bytes] = []
    together(
        store,
        lambda: draws is None or drawn.append(write_draws(store, ref, draws)),
        lambda: write_plan(store, ref, record),
        *alongside,
    )
    if source is not None and drawn and tasks:
        handover.hand_over_plan(store, tasks[0], source, drawn[0])
    return tasks


def write_draws(store: Store, ref: RevisionRef, draws: list[Draws]) -> bytes:
    """Every page's draws, for the decoders (`read_draws`); returns the bytes written."""
    data = json.dumps({"pages": [compact(page) for page in draws]}).encode()
    store.put_bytes(keys.draws_key(ref.revision), data)
    return data


def read_draws(store: Store, ref: RevisionRef, first: int, last: int) -> dict[int, Draws]:
    """Pages `first`..`last`'s draws as planned; {} when the revision was staged without them
    (before draws were kept, or their working material is gone): the decoders walk those
    pages themselves."""
    try:
        data = store.get_bytes(keys.draws_key(ref.revision), store_json.JSON_CAP)
    except MissingObject:
        return {}
    return draws_from(data, first, last)


def draws_from(data: bytes, first: int, last: int) -> dict[int, Draws]:
    """Pages `first`..`last`'s draws from the bytes `write_draws` wrote."""
    pages = json.loads(data)["pages"]
    return {page: expand(pages[page - 1]) for page in range(first, min(last, len(pages)) + 1)}

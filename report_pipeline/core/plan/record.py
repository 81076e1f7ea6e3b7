"""A revision's plan (archive/<report_id>/<revision>/plan.json), the one reader and writer of it.

Written once at staging (core/plan/store.py builds it). It holds the images expected per
page (what the manifest must account for), the pages whose content streams broke off (damaged:
what broke off, and the sha256 that names it) or were repaired, when its tasks were queued (the
unfinished revision's deadline) and its tasks (the manifest step finds any that a re-execution
left out)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from report_pipeline.core.model.messages import PageTask, RevisionRef
from report_pipeline.core.model.records import Break, PageStreams
from report_pipeline.core.model.store_json import JSON_CAP
from report_pipeline.core.storage.store import Store


@dataclass(frozen=True)
class Plan:
    expected: dict[int, int]  # page -> image draws the manifest must account for
    streams: dict[int, PageStreams]  # page -> its content streams broken or repaired
    queued_at: str
    tasks: tuple[PageTask, ...]


def write_plan(store: Store, ref: RevisionRef, plan: Plan) -> None:
    tasks = [{k: v for k, v in asdict(task).items() if k != "ref"} for task in plan.tasks]
    streams = {page: asdict(found) for page, found in plan.streams.items()}
    record = {"expected": plan.expected, "queued_at": plan.queued_at, "streams": streams,
              "tasks": tasks}  # fmt: skip
    store.put_bytes(ref.plan_key, json.dumps(record).encode())


def read_plan(store: Store, ref: RevisionRef) -> Plan:
    """The revision's plan (a plan written before tasks or stream verdicts were kept: none; one
    that counted broken streams only: damaged pages without what broke off)."""
    return plan_from_json(store.get_bytes(ref.plan_key, JSON_CAP), ref)


def plan_from_json(data: bytes, ref: RevisionRef) -> Plan:
    record = json.loads(data)
    tasks = tuple(
        PageTask(ref, **{**task, "unread_inline": tuple(  # a plan before whole ones: all cut off
            (page, n, whole[0] if whole else 0)
            for page, n, *whole in task.get("unread_inline", ()))})
        for task in record.get("tasks", [])
    )  # fmt: skip
    streams = {int(page): PageStreams(count) for page, count in record.get("broken", {}).items()}
    streams |= {int(page): _streams(found) for page, found in record.get("streams", {}).items()}
    return Plan(
        {int(page): count for page, count in record["expected"].items()},
        streams, record["queued_at"], tasks,
    )  # fmt: skip


def _streams(found: dict[str, Any]) -> PageStreams:
    return PageStreams(**{**found, "breaks": tuple(Break(**b) for b in found["breaks"])})


def queued_at(data: bytes) -> str:
    """When a plan's tasks were queued, from its JSON (the retention audit reads no more)."""
    return json.loads(data)["queued_at"]

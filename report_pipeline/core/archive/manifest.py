"""The manifest: one JSON document per revision accounting for every page and image occurrence."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from report_pipeline.core.messages import RevisionRef
from report_pipeline.core.retention.retention import Deadlines, parse_iso
from report_pipeline.core.storage.store import MissingObject, Store

SCHEMA_VERSION = 1
JSON_CAP = 64 * 1024 * 1024  # the most a manifest or a step's JSON record may hold


@dataclass(frozen=True)
class ChildRecord:
    sequence: int
    page: int
    index: int
    state: str  # archived | quarantined
    attempts: int
    validated_first_attempt: bool
    queued_at: str
    started_at: str
    finished_at: str
    content_hash: str | None
    width: int
    height: int
    format: str | None
    mode: str | None
    bytes: int
    stream_bytes: int
    declared_type: str
    signature: str | None
    quarantine_reason: str | None
    quarantine_detail: str | None
    object_key: str | None
    cleanup_lease: str
    origin: str  # how the page draws the image: xobject, inline, form/xobject, annotation/…
    xref: int  # the image's PDF object number (0: inline), to compare with `pdfimages -list`
    # MD5 (hex) of the bytes uploaded to `object_key`, recorded at upload (None before it was
    # kept): what S3 checked the upload against and lists as the object's ETag
    md5: str | None = None


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


def _page_rows(expected: dict[int, int], children: list[ChildRecord]) -> list[dict[str, Any]]:
    states = Counter((c.page, c.state) for c in children)
    rows = []
    for page, count in sorted(expected.items()):
        archived, quarantined = states[(page, "archived")], states[(page, "quarantined")]
        done = archived + quarantined == count
        rows.append(
            {"page": page, "expected": count, "archived": archived, "quarantined": quarantined,
             "state": "complete" if done else "incomplete"}
        )  # fmt: skip
    return rows


def _metrics(children: list[ChildRecord], peak_rss_kib: int) -> dict[str, Any]:
    ages = [(parse_iso(c.started_at) - parse_iso(c.queued_at)).total_seconds() for c in children]
    first = sum(c.validated_first_attempt for c in children)
    return {
        "validated_first_attempt_pct": round(100 * first / len(children), 2) if children else 100.0,
        "queue_age_p95_seconds": round(percentile(ages, 95), 3),
        "peak_rss_kib": peak_rss_kib,
    }


def _counts(
    expected: dict[int, int], children: list[ChildRecord], pages: int | None
) -> dict[str, int]:
    archived = [c for c in children if c.state == "archived"]
    distinct = {c.content_hash: c.bytes for c in archived}
    return {
        "pages": len(expected),
        "pages_unaccounted": max(0, (len(expected) if pages is None else pages) - len(expected)),
        "expected": sum(expected.values()),
        "accounted": len(children),
        "archived": len(archived),
        "quarantined": sum(c.state == "quarantined" for c in children),
        "distinct_images": len(distinct),
        "duplicate_occurrences": len(archived) - len(distinct),
        "archived_bytes": sum(distinct.values()),
    }


def build_manifest(
    ref: RevisionRef,
    expected: dict[int, int],
    children: list[ChildRecord],
    deadlines: Deadlines,
    created_at: str,
    peak_rss_kib: int = 0,
    pages: int | None = None,
    repaired: bool = False,
) -> dict[str, Any]:
    """The parent is complete only when archived + quarantined equals the expected count and
    every one of the report's `pages` (as intake counted them) has its row."""
    counts = _counts(expected, children, pages)
    accounted = counts["archived"] + counts["quarantined"] == counts["expected"]
    complete = accounted and counts["pages_unaccounted"] == 0
    return {
        "schema_version": SCHEMA_VERSION,
        "parent_revision": ref.revision,
        "report_id": ref.report_id,
        "month": ref.month,
        "source_hash": ref.source_hash,
        "extractor_version": ref.extractor_version,
        "state": "complete" if complete else "incomplete",
        "repaired": repaired,
        "created_at": created_at,
        "deadlines": asdict(deadlines),
        "counts": counts,
        "metrics": _metrics(children, peak_rss_kib),
        "pages": _page_rows(expected, children),
        "children": [asdict(c) for c in children],
    }


def dumps(document: dict[str, Any]) -> bytes:
    return json.dumps(document, indent=1, sort_keys=True).encode()


def loads(data: bytes) -> dict[str, Any]:
    document = json.loads(data)
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"unsupported manifest schema {document.get('schema_version')!r}")
    return document


def sequenced(records: list[dict[str, Any]]) -> list[ChildRecord]:
    """Child records from every task, numbered in page order."""
    ordered = sorted(records, key=lambda r: (r["page"], r["index"]))
    return [ChildRecord(**{**r, "sequence": n}) for n, r in enumerate(ordered, start=1)]


def tombstone(document: dict[str, Any], expired_at: str, size: int, objects: int) -> dict:
    """What stays of an expired revision: the record, with every child marked `expired`."""
    children = [{**child, "state": "expired"} for child in document["children"]]
    return {
        **document,
        "state": "expired",
        "expired_at": expired_at,
        "deleted": {"objects": objects, "bytes": size},
        "children": children,
    }


def read(store: Store, key: str) -> dict[str, Any] | None:
    """The stored manifest at `key`, or None when there is none."""
    try:
        return loads(store.get_bytes(key, JSON_CAP))  # one GET, not a HEAD first
    except MissingObject:
        return None


def quarantine_reasons(document: dict[str, Any]) -> Counter:
    """How many image occurrences were quarantined, per reason."""
    return Counter(
        c["quarantine_reason"] for c in document["children"] if c["state"] == "quarantined"
    )

"""Dagster metadata built from core results: what the UI shows for steps and the asset."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import Any

import dagster as dg

from report_pipeline.core.archive.manifest import damaged_pages
from report_pipeline.core.checks.month_checks import quarantined_pct
from report_pipeline.core.model.messages import ArchivedTask, PageTask, StagedReport
from report_pipeline.core.model.records import ChildRecord, Manifest


def staged_metadata(staged: StagedReport) -> dict[str, Any]:
    """What the step staged, and which file of the month folder it was (its name within the
    folder, never a path) with the files it superseded."""
    file = staged.source_file
    chosen = {
        "source_file": file.name,
        "source_arrived_at": file.arrived_at,
        "superseded_files": ", ".join(file.superseded),
    } if file else {}  # fmt: skip
    return {
        **chosen,
        "report_id": staged.ref.report_id,
        "revision": staged.ref.revision,
        "source_sha256": staged.ref.source_hash,
        "pages": staged.page_count,
        "repaired": staged.facts.repaired,
        "encrypted": staged.facts.encrypted,
        "shared_page_nodes": staged.facts.shared_page_nodes,
        "bytes_before_signature": staged.facts.signature_offset,
        "source_bytes": staged.source_bytes,
        "superseded_reports": staged.superseded,
        "reused_existing_manifest": staged.reused,
    }


def page_group_metadata(task: PageTask) -> dict[str, Any]:
    """Which pages a step covers: shown on both of a page group's steps."""
    return {
        "pages": task.last_page - task.first_page + 1,
        "first_page": task.first_page,
        "last_page": task.last_page,
    }


def task_metadata(archived: ArchivedTask, children: list[ChildRecord]) -> dict[str, Any]:
    """Per-page visibility for a page group: its pages, and one table row per page."""
    states = Counter((c.page, c.state) for c in children)
    rows = []
    for page in range(archived.task.first_page, archived.task.last_page + 1):
        done, bad = states[(page, "archived")], states[(page, "quarantined")]
        images = done + bad + states[(page, "hidden")]  # hidden: not shown, not archived
        rows.append(
            dg.TableRecord({"page": page, "images": images, "archived": done, "quarantined": bad})
        )
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn(name, "int") for name in ("page", "images", "archived", "quarantined")
        ]
    )
    return {
        **page_group_metadata(archived.task),
        "page_table": dg.MetadataValue.table(rows, schema),
        "archived": archived.archived,
        "quarantined": archived.quarantined,
        "new_objects": archived.new_objects,
        "attempt": archived.attempts,
    }


def quarantine_table(children: tuple[ChildRecord, ...]) -> dg.TableMetadataValue:
    rows = [
        dg.TableRecord(
            {
                "sequence": c.sequence,
                "page": c.page,
                "reason": c.quarantine_reason,
                "detail": c.quarantine_detail or "",
            }
        )  # fmt: skip
        for c in children
        if c.state == "quarantined"
    ]
    schema = dg.TableSchema(
        columns=[
            dg.TableColumn("sequence", "int"), dg.TableColumn("page", "int"),
            dg.TableColumn("reason", "string"), dg.TableColumn("detail", "string"),
        ]
    )  # fmt: skip
    return dg.MetadataValue.table(rows, schema)


def page_summary(manifest: Manifest) -> dg.TableMetadataValue:
    """The manifest's per-page rows: on every materialization of the month, reused or not."""
    rows = [
        dg.TableRecord({"page": p.page, "images": p.expected, "archived": p.archived,
                        "quarantined": p.quarantined, "state": p.state})
        for p in manifest.pages
    ]  # fmt: skip
    schema = dg.TableSchema(
        columns=[dg.TableColumn(n, "int") for n in ("page", "images", "archived", "quarantined")]
        + [dg.TableColumn("state", "string")]
    )
    return dg.MetadataValue.table(rows, schema)


def source_metadata(manifest: Manifest) -> dict[str, Any]:
    """Which file of the month folder the revision was made from, and what it superseded."""
    source = manifest.source_file
    if source is None:  # archived before revisions recorded it, or outside intake (preview)
        return {"report_file": "(not recorded)", "report_sha256": manifest.source_hash}
    return {
        "report_file": source.name,
        "report_source": source.source,
        "report_bytes": source.bytes,
        "report_sha256": source.sha256,
        "report_pages": source.pages,
        "report_arrived_at": source.arrived_at or "(before arrivals were recorded)",
        "superseded_files": ", ".join(source.superseded) or "(none)",
    }


def manifest_metadata(manifest: Manifest, key: str, reused: bool) -> dict[str, Any]:
    metrics = manifest.metrics
    return {
        "state": manifest.state,
        "extractor_version": manifest.extractor_version,
        **source_metadata(manifest),
        "repaired": manifest.repaired,
        "encrypted": bool(manifest.encrypted),
        "permissions": ", ".join(manifest.permissions or ()),
        "shared_page_nodes": manifest.shared_page_nodes or 0,
        "bytes_before_signature": manifest.signature_offset or 0,
        "revision": manifest.parent_revision,
        "manifest_key": key,
        "reused_existing_manifest": reused,
        **asdict(manifest.counts),
        "damaged_pages": len(damaged_pages(manifest)),
        "repaired_streams": sum(p.repaired_streams for p in manifest.pages),
        "validated_first_attempt_pct": metrics.validated_first_attempt_pct,
        "quarantined_pct": quarantined_pct(manifest),
        "queue_age_p95_seconds": metrics.queue_age_p95_seconds,
        "decode_peak_rss_mib": round(metrics.peak_rss_kib / 1024, 1),
        "work_delete_by": manifest.deadlines.work_delete_by,
        "archive_delete_by": manifest.deadlines.archive_delete_by,
        "quarantined_items": quarantine_table(manifest.children),
        "page_table": page_summary(manifest),
    }

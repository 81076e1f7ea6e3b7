"""The small frozen messages passed between steps. They carry keys and counts, never bytes."""

from __future__ import annotations

from dataclasses import dataclass

from report_pipeline.core.model import keys
from report_pipeline.core.model.records import Counts, Manifest, SourceFacts, SourceFile


@dataclass(frozen=True)
class RevisionRef:
    """One report revision: the idempotency key (report_id, source_hash, extractor_version)."""

    report_id: str
    month: str
    source_hash: str
    extractor_version: str
    revision: str

    @property
    def staged_key(self) -> str:
        return keys.staged_key(self.report_id, self.revision)

    @property
    def work_prefix(self) -> str:
        return keys.work_prefix(self.revision)

    @property
    def archive_prefix(self) -> str:
        return keys.archive_prefix(self.report_id, self.revision)

    @property
    def manifest_key(self) -> str:
        return keys.manifest_key(self.report_id, self.revision)

    @property
    def plan_key(self) -> str:
        return keys.plan_key(self.report_id, self.revision)

    def image_key(self, content_hash: str) -> str:
        return keys.image_key(self.report_id, self.revision, content_hash)

    def evidence_key(self, raw_hash: str) -> str:
        return keys.evidence_key(self.report_id, self.revision, raw_hash)


@dataclass(frozen=True)
class StagedReport:
    ref: RevisionRef
    page_count: int
    source_bytes: int
    superseded: int
    reused: bool  # the revision already has a manifest: nothing is extracted again
    facts: SourceFacts = SourceFacts()  # repaired, encrypted, shared page-tree nodes
    source_file: SourceFile | None = None  # which file of the month folder, as intake chose it


@dataclass(frozen=True)
class PageTask:
    ref: RevisionRef
    task_key: str  # also the Dagster mapping key: page_0001 or pages_0001_0070
    first_page: int
    last_page: int
    images: int
    queued_at: str
    cpu_budget_s: float = 0.0  # CPU its decoders may use: its share of the report's budget
    # (page, n, whole): inline images a page begins that MuPDF never reads, recorded as
    # quarantined; `whole` of them complete (BI … EI), the rest cut off by the content's end
    unread_inline: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class ExtractedTask:
    task: PageTask
    outcomes_key: str
    validated: int
    quarantined: int
    started_at: str
    lease_until: str
    peak_rss_kib: int
    new_objects: int = 0  # objects this task created in the archive (absent before it wrote them)
    attempts: int = 1  # the extraction step's attempt that produced it (1: no retry)


@dataclass(frozen=True)
class ArchivedTask:
    task: PageTask
    children_key: str
    archived: int
    quarantined: int
    new_objects: int
    attempts: int
    peak_rss_kib: int


@dataclass(frozen=True)
class PublishedManifest:
    """`report_manifest`'s value: where the revision's manifest is kept, and its counts. The
    manifest itself stays in the store, under the revision's retention, never in an IO manager."""

    report_id: str
    revision: str
    state: str
    manifest_key: str
    counts: Counts

    @classmethod
    def of(cls, manifest: Manifest, manifest_key: str) -> PublishedManifest:
        return cls(
            manifest.report_id, manifest.parent_revision, manifest.state, manifest_key,
            manifest.counts,
        )  # fmt: skip

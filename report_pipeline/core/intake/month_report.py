"""The month's report, one rule for the sensor, a run (UI launch, backfill, intake's run) and
`submit`: every source's files of the month, read as core/intake/arrivals.py needs, with what was
read recorded in the month's arrivals ledger (ledger.py). Dagster-free.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from report_pipeline.core.archive import months
from report_pipeline.core.archive.months import Held
from report_pipeline.core.intake import ledger as ledgers
from report_pipeline.core.intake.arrivals import Arrival, Decision, Ledger, Read, decide, name_of
from report_pipeline.core.intake.intake import (
    RefusedInput,
    content_hash,
    report_id_for,
    revision_for,
)
from report_pipeline.core.intake.sources import Entry, ReportRef, ReportSource
from report_pipeline.core.model import current as month_record
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.messages import RevisionRef, StagedReport
from report_pipeline.core.model.records import Manifest, SourceFacts, SourceFile
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.model.store_json import complete_manifest
from report_pipeline.core.scratch.workdir import lease_for, private_workdir
from report_pipeline.core.storage.parallel_io import io_workers, together
from report_pipeline.core.storage.store import Store, TransientStorageError

NO_REPORT = "no_report"
REPORT_GONE = "report_gone"
SUPERSEDED = "superseded"
_ROUNDS = 4


def month_entries(sources: Sequence[ReportSource], month: str) -> list[Entry]:
    """Every eligible file of the month, in every source (a source that fails raises)."""
    return [entry for source in sources for entry in source.entries(month)]


class Reader:
    """A `Read` of files in `sources`: each streamed under the byte cap and hashed, in a private
    workdir made at the first read. A remote source's download is removed once hashed, except
    with `keep`: the last one stays (until the next read or the reader's end), so a run stages
    the file it just hashed without fetching it again (`kept`)."""

    def __init__(self, sources: Sequence[ReportSource], settings: PipelineSettings, owner: str,
                 stack: ExitStack, keep: bool = False) -> None:  # fmt: skip
        self._by_name = {source.name: source for source in sources}
        self._settings, self._owner, self._stack, self._keep = settings, owner, stack, keep
        self._workdir: Path | None = None
        self._kept: tuple[ReportRef, str, Path] | None = None

    def __call__(self, entry: Entry) -> tuple[str, int]:
        cap = self._settings.limits.max_report_bytes
        if self._workdir is None:
            lease = lease_for(self._settings, self._owner)
            self._workdir = self._stack.enter_context(
                private_workdir(self._settings.work_root, lease)
            )
        self._drop()
        with self._by_name[entry.ref.source].opened(entry.ref, self._workdir, cap) as path:
            downloaded = path.is_relative_to(self._workdir)
            try:
                sha256, size = content_hash(path, cap)
            except BaseException:
                if downloaded:
                    path.unlink(missing_ok=True)
                raise
            if downloaded and self._keep:
                self._kept = (entry.ref, sha256, path)
            elif downloaded:
                path.unlink(missing_ok=True)
            return sha256, size

    def kept(self, ref: ReportRef | None, sha256: str) -> Path | None:
        """The last download, if it is `ref`'s file and its bytes hashed to `sha256`."""
        if self._kept is None or ref is None or self._kept[:2] != (ref, sha256):
            return None
        return self._kept[2]

    def _drop(self) -> None:
        if self._kept is not None:
            self._kept[2].unlink(missing_ok=True)
            self._kept = None


@contextmanager
def reader(
    sources: Sequence[ReportSource], settings: PipelineSettings, owner: str, keep: bool = False
) -> Iterator[Reader]:
    """A `Reader` whose workdir (and what it kept) is removed when the block ends."""
    with ExitStack() as stack:
        yield Reader(sources, settings, owner, stack, keep)


def look(
    store: Store, month: str, entries: Sequence[Entry], listed: Sequence[str], read: Read,
    now_ns: int | None = None, ledger: Ledger | None = None,
    beside: Callable[[Decision], object] | None = None,
) -> Decision:  # fmt: skip
    """Decide the month's report and record what was read. If another writer recorded a content
    meanwhile, decide again on the merged ledger (nothing is read twice). `ledger`: the month's,
    when the caller just loaded it. `beside` is called with each decision while it is recorded
    (side by side on S3): reads only, since a decision stands only once recorded."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    ledger, seen = ledgers.load(store, month) if ledger is None else ledger, ()
    for _ in range(_ROUNDS):
        decision = decide(ledger, entries, read, now_ns, listed)
        seen += decision.read
        if beside is None:
            committed = ledgers.commit(store, ledger, decision.ledger)
        else:
            committed, _ = together(
                store,
                lambda base=ledger, made=decision: ledgers.commit(store, base, made.ledger),
                lambda made=decision: beside(made),
            )
        if committed.arrivals == decision.ledger.arrivals:
            return replace(decision, ledger=committed, read=seen)
        ledger = committed
    raise TransientStorageError(f"the arrivals of {month} kept changing")


def describe(report: Arrival) -> str:
    return f"{report.name}, sha256 {report.sha256[:12]}"


def named(month: str, entry: Entry, refused: RefusedInput) -> RefusedInput:
    """A refusal of a file that is not the one a caller asked for: it names the file."""
    return RefusedInput(refused.code, f"{month}/{name_of(entry)}: {refused.message}")


@dataclass(frozen=True)
class Chosen:
    """The file a run stages (`ref`), or the archived revision it reuses (`archived`, when the
    month's report has left its source but is archived already)."""

    source: str
    ref: ReportRef | None
    sha256: str
    file: SourceFile  # pages: 0 until staging counts them
    archived: StagedReport | None = None
    # what the month holds of a revision (months.held), read while the arrival was recorded
    held: tuple[RevisionRef, Held] | None = None


@dataclass(frozen=True)
class NotLatest:
    """Intake's content is no longer the month's report: a later one superseded it."""

    message: str


def choose_for_run(
    store: Store, sources: Sequence[ReportSource], month: str, settings: PipelineSettings,
    owner: str, source: str = "", key: str = "", source_hash: str = "",
    read: Reader | None = None,
) -> Chosen | NotLatest:  # fmt: skip
    """Inside a run: the month's report. Intake's run names its file (`source`, `key`) and bytes
    (`source_hash`); a UI launch or backfill names nothing. Raises `no_report` when the month's
    folders hold no report, `report_gone` when the latest report left them (and is not archived),
    and the refusal of a file that cannot be read but may be the latest. `read`: the run's
    reader (one that keeps its last download for `opened_for_run`), else one of its own."""
    entries, ledger = together(  # the inbox's listing and the month's ledger: one wait on S3
        store, lambda: month_entries(sources, month), lambda: ledgers.load(store, month)
    )
    if not entries:
        raise RefusedInput(NO_REPORT, f"no report (*.pdf) for {month} in the inbox")
    looked: dict[str, tuple[RevisionRef, Held]] = {}

    def ahead(decision: Decision) -> None:  # beside the arrival's write: one wait on S3
        if decision.report is not None and io_workers(store) > 1:
            ref = _ref(decision.report, month, settings)
            looked[ref.source_hash] = (ref, months.held(store, ref))

    with ExitStack() as stack:
        read = read or stack.enter_context(reader(sources, settings, owner))
        decision = look(store, month, entries, [s.name for s in sources], read, ledger=ledger,
                        beside=ahead)  # fmt: skip
    report = decision.report
    mine = next((e for e in entries if key and (e.ref.source, e.ref.key) == (source, key)), None)
    if source_hash and (report is None or report.sha256 != source_hash):
        return _not_latest(month, decision, source_hash, mine)
    if decision.blocked is not None:
        raise named(month, *decision.blocked)
    if report is None:  # every file refused as missing while it was read
        raise RefusedInput(NO_REPORT, f"no report (*.pdf) for {month} in the inbox")
    file = mine or decision.file
    superseded = tuple(n for n in decision.superseded if file is None or n != name_of(file))
    if file is None:
        archived = _archived(store, month, report, settings, superseded)
        if archived is None:
            raise RefusedInput(
                REPORT_GONE,
                f"the month's latest report ({describe(report)}) is no longer in the inbox; put "
                "it back or add a newer one",
            )
        return Chosen(report.source, None, report.sha256, archived.source_file, archived)
    found = SourceFile(file.ref.source, name_of(file), report.bytes, report.sha256, 0,
                       report.arrived_at, superseded)  # fmt: skip
    return Chosen(file.ref.source, file.ref, report.sha256, found,
                  held=looked.get(report.sha256))  # fmt: skip


@contextmanager
def opened_for_run(
    sources: Sequence[ReportSource],
    chosen: Chosen,
    settings: PipelineSettings,
    owner: str,
    read: Reader | None = None,
) -> Iterator[Path]:
    """The chosen file's bytes, authorized again, in a private workdir for as long as needed;
    the download `read` kept of it when it just hashed it (a month's first look), which
    staging checks against the same sha256."""
    if read is not None and (kept := read.kept(chosen.ref, chosen.sha256)) is not None:
        yield kept
        return
    source = next(s for s in sources if s.name == chosen.source)
    lease = lease_for(settings, owner)
    with (
        private_workdir(settings.work_root, lease) as workdir,
        source.opened(chosen.ref, workdir, settings.limits.max_report_bytes) as path,
    ):
        yield path


def _not_latest(month: str, decision: Decision, source_hash: str, mine: Entry | None) -> NotLatest:
    recorded = decision.ledger.arrivals.get(source_hash)
    name = name_of(mine) if mine else recorded.name if recorded else "intake's report"
    latest = decision.report
    if latest is None:
        later = "it is gone"
    elif latest.name == name:
        later = f"new content in {name} arrived later ({latest.arrived_at})"
    else:
        later = f"{latest.name} arrived later ({latest.arrived_at})"
    return NotLatest(
        f"{month}/{name} (sha256 {source_hash[:12]}) is no longer the month's report: {later} "
        "and superseded it; nothing extracted"
    )


def _archived(
    store: Store,
    month: str,
    report: Arrival,
    settings: PipelineSettings,
    superseded: tuple[str, ...],
) -> StagedReport | None:
    """The month's report as its archive holds it (complete, by this extractor), if it does:
    its own revision, or the month's current one when a review revised it."""
    ref = _ref(report, month, settings)
    manifest = complete_manifest(store, ref) or _current_holding(store, ref)
    if manifest is None:
        return None
    permissions = tuple(manifest.permissions or ())
    facts = SourceFacts(
        manifest.repaired, bool(manifest.encrypted), permissions,
        manifest.shared_page_nodes or 0, manifest.signature_offset or 0,
    )  # fmt: skip
    pages = manifest.counts.pages
    file = SourceFile(report.source, report.name, report.bytes, report.sha256, pages,
                      report.arrived_at, superseded)  # fmt: skip
    return StagedReport(ref, pages, report.bytes, len(superseded), True, facts, file)


def _ref(report: Arrival, month: str, settings: PipelineSettings) -> RevisionRef:
    report_id = report_id_for(report.source, month)
    revision = revision_for(report_id, report.sha256, settings.extractor_version)
    return RevisionRef(report_id, month, report.sha256, settings.extractor_version, revision)


def _current_holding(store: Store, ref: RevisionRef) -> Manifest | None:
    """The month's current revision (core/model/current.py) when it holds `ref`'s report."""
    head = month_record.head(store, ref.month)
    same = (ref.report_id, ref.source_hash, ref.extractor_version)
    if head is None or (head.report_id, head.source_hash, head.extractor_version) != same:
        return None
    manifest = store_json.read_manifest(store, keys.manifest_key(head.report_id, head.revision))
    return manifest if manifest is not None and manifest.state == "complete" else None


def record_submitted(
    store: Store, sources: Sequence[ReportSource], month: str, arrival: Arrival,
    settings: PipelineSettings, owner: str,
) -> None:  # fmt: skip
    """`submit`: the content arrives now (explicit intent), unless the month has seen it. Seen and
    still the month's latest: a resubmit, fine. Seen and superseded since: refused."""
    entries = month_entries(sources, month)
    with reader(sources, settings, owner) as read:
        decision = look(store, month, entries, [s.name for s in sources], read, arrival.arrived_ns)
    ledger = decision.ledger
    if arrival.sha256 in ledger.arrivals:
        latest = ledger.latest
        if latest is not None and latest.sha256 != arrival.sha256:
            raise RefusedInput(
                SUPERSEDED,
                f"this report's content arrived in {month} before {latest.name}, which superseded "
                "it; submit a corrected file with new content",
            )
        return
    updated = replace(ledger, arrivals={**ledger.arrivals, arrival.sha256: arrival})
    ledgers.commit(store, ledger, updated)

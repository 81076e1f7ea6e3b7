"""Intake, before any run starts: authorize a reference against the configured sources, apply
the input limits, compute the idempotency key, and find an earlier run of the same revision.

Shared by `new_report_sensor` and `report-pipeline submit`; Dagster-free (the launcher is given).
A launch is preceded by the revision's claim in the store (core/intake/claims.py), so concurrent
submits, the sensor and UI launches make one run per revision, whatever the timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from report_pipeline.core.intake import claims
from report_pipeline.core.intake.arrivals import Arrival
from report_pipeline.core.intake.intake import (
    INSPECTION_FAILED,
    RefusedInput,
    check_month,
    identify,
)
from report_pipeline.core.intake.month_report import record_submitted
from report_pipeline.core.intake.sources import ReportRef, ReportSource, eligible, registered_name
from report_pipeline.core.model.records import SourceFacts
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.scratch.workdir import lease_for, private_workdir
from report_pipeline.core.storage.store import DiskFull, Store

REVISION_TAG = "report_pipeline/revision"
REPORT_ID_TAG = "report_pipeline/report_id"
SOURCE_HASH_TAG = "report_pipeline/source_hash"
SOURCE_TAG = "report_pipeline/source"
# A run in one of these states is the revision's run: a duplicate launches nothing. A FAILED or
# CANCELED run that holds the revision's claim is reported, not launched again
# (core/intake/claims.py).
LIVE_OR_DONE = claims.PREFERRED


@dataclass(frozen=True)
class Admission:
    """A reference that passed authorization and the input limits."""

    ref: ReportRef
    month: str
    report_id: str
    source_hash: str
    revision: str  # the idempotency key, hashed: also the sensor's run key
    size: int
    pages: int
    facts: SourceFacts = SourceFacts()  # repaired, encrypted, shared page-tree nodes

    def tags(self) -> dict[str, str]:
        return revision_tags(self.revision, self.report_id, self.source_hash, self.ref.source)

    def stage_config(self) -> dict[str, str]:
        """`stage_report`'s config: exactly this file, and only with these bytes."""
        return {
            "source": self.ref.source,
            "report_key": self.ref.key,
            "source_hash": self.source_hash,
        }


def revision_tags(revision: str, report_id: str, source_hash: str, source: str) -> dict[str, str]:
    """The tags that make a run its revision's run (no path or file name in them)."""
    return {
        REVISION_TAG: revision,
        REPORT_ID_TAG: report_id,
        SOURCE_HASH_TAG: source_hash,
        SOURCE_TAG: source,
    }


def check_open(month: str, is_open: Callable[[str], bool]) -> str:
    """`month` if its partition exists; a month's partition opens when the month ends."""
    if not is_open(check_month(month)):
        raise RefusedInput(
            "unknown_partition",
            f"{month} is not a monthly partition yet (a month's partition opens when the month "
            "ends)",
        )
    return month


def authorize(sources: Sequence[ReportSource], reference: str) -> tuple[ReportSource, ReportRef]:
    if ".." in reference.replace("\\", "/").split("/"):
        raise RefusedInput("not_authorized", "reference contains '..' (path traversal)")
    for source in sources:
        ref = source.authorize(reference)
        if ref is not None:
            return source, ref
    raise RefusedInput("not_authorized", "reference is outside every configured source")


def admit(
    source: ReportSource, ref: ReportRef, month: str, settings: PipelineSettings, owner: str
) -> Admission:
    """Stream the report into a private file with the byte cap, then check %PDF, encryption,
    structure and page count. Nothing is kept: the private directory goes when this returns.

    Whatever goes wrong on the way (a source that fails mid-read, a decoder error) is a
    refusal with a code, `inspection_failed` when nothing more specific is known; but a full
    work root (`DiskFull`) is raised as it is: the report is not at fault, and is read again
    once there is space."""
    try:
        return _admit(source, ref, month, settings, owner)
    except (RefusedInput, DiskFull):  # a full work root is no fault of the report's
        raise
    except Exception as error:
        raise RefusedInput(
            INSPECTION_FAILED, f"report could not be read or inspected ({type(error).__name__})"
        ) from error


def _admit(
    source: ReportSource, ref: ReportRef, month: str, settings: PipelineSettings, owner: str
) -> Admission:
    with (
        private_workdir(settings.work_root, lease_for(settings, owner)) as workdir,
        source.opened(ref, workdir, settings.limits.max_report_bytes) as path,
    ):
        found = identify(path, workdir, source.name, month, settings)
    key, checked = found.ref, found.inspection
    return Admission(ref, month, key.report_id, key.source_hash, key.revision, found.size,
                     checked.pages, checked.facts)  # fmt: skip


STILL_ARRIVING = "still_arriving"


def quiet(
    source: ReportSource,
    ref: ReportRef,
    settle_seconds: float,
    clock=time.time_ns,
    sleep=time.sleep,
) -> int:
    """The file's last change, once it has been quiet for `settle_seconds` (the sensor's rule
    for a file still arriving): a file changed more recently is waited for once, and refused as
    `still_arriving` if it changed again meanwhile."""
    changed = source.changed_ns(ref)
    wait = settle_seconds - (clock() - changed) / 1e9
    if wait <= 0:
        return changed
    sleep(wait)
    if source.changed_ns(ref) != changed:
        raise RefusedInput(STILL_ARRIVING, f"the report is still being written (it changed within "
                           f"the last {settle_seconds:g} s); submit it again once it is "
                           "complete")  # fmt: skip
    return changed


def existing_run(runs: Sequence[tuple[str, str]]) -> str | None:
    """The run id that makes a new launch a duplicate: a successful run first, else a live one."""
    for status in LIVE_OR_DONE:
        for run_id, run_status in runs:
            if run_status == status:
                return run_id
    return None


def arrival_now(admission: Admission) -> Arrival:
    """A submitted report's content, arriving now under the name it has in the month folder."""
    ref, now = admission.ref, time.time_ns() // 1000 * 1000
    name = ref.rel.rsplit("/", 1)[-1]
    if ref.month != admission.month or not eligible(name):
        name = registered_name(admission.source_hash)  # where `register` copies it
    return Arrival(admission.source_hash, now, now, ref.source, name, admission.size)


class Launcher(Protocol):
    def runs_tagged(self, key: str, value: str) -> list[tuple[str, str]]:
        """(run id, status) of every run with this tag."""

    def launch(self, month: str, stage_config: dict[str, str], tags: dict[str, str]) -> str:
        """Launch the month's run with `stage_report` config and tags; returns the run id."""


@dataclass(frozen=True)
class Submitted:
    status: str  # "launched", "duplicate" or "failed" (the revision's run failed)
    run_id: str  # "" only if another claimer was still launching after a wait
    admission: Admission
    detail: str = ""  # for "duplicate" and "failed": who holds the revision, in one line


def submit(
    reference: str, month: str, sources: Sequence[ReportSource], settings: PipelineSettings,
    is_open: Callable[[str], bool], launcher: Launcher, store: Store, settle_seconds: float = 0,
) -> Submitted:  # fmt: skip
    """The intake API: authorize, wait for the file to be quiet (the sensor's rule), limit,
    record the content's arrival in the month (refused as `superseded` if a later one replaced
    it), claim the revision, register the report in its source, launch. Whoever loses the claim
    reports the run that holds it."""
    check_open(month, is_open)
    source, ref = authorize(sources, reference)
    if ref.month not in (None, month):
        raise RefusedInput("month_mismatch", f"reference is in the {ref.month} folder, not {month}")
    changed = quiet(source, ref, settle_seconds)
    admission = admit(source, ref, month, settings, "intake/submit")
    if source.changed_ns(ref) != changed:
        raise RefusedInput(STILL_ARRIVING, "the report changed while it was read: it is still "
                           "being written; submit it again once it is complete")  # fmt: skip
    record_submitted(store, sources, month, arrival_now(admission), settings, "intake/submit")
    existing = existing_run(launcher.runs_tagged(REVISION_TAG, admission.revision))
    if existing is not None:  # also finds runs from before claims existed
        detail = f"revision {admission.revision} already has run {existing}"
        return Submitted("duplicate", existing, admission, detail)

    def runs_of(token: str) -> list[tuple[str, str]]:
        return launcher.runs_tagged(claims.CLAIM_TAG, token)

    outcome = claims.acquire(store, admission.revision, "submit", runs_of)
    if not outcome.won:
        outcome = claims.await_run(outcome, runs_of)
        status = "failed" if outcome.failed else "duplicate"
        return Submitted(status, outcome.run_id, admission, outcome.describe())
    try:
        registered = source.register(ref, month, admission.source_hash, admission.size)
        admission = replace(admission, ref=registered)
        tags = {**admission.tags(), claims.CLAIM_TAG: outcome.claim.token}
        run_id = launcher.launch(month, admission.stage_config(), tags)
    except BaseException:
        claims.release(store, outcome.claim)
        raise
    return Submitted("launched", run_id, admission)

"""The store's key space: every key the pipeline writes is built here, and read back only here.

    staged/<report_id>/<revision>.pdf                        the staged source (short clock)
    work/<revision>/draws.json                                every page's image draws, planned
    work/<revision>/<task>/outcomes.json                      a task's outcomes, until archived
    archive/<report_id>/<revision>/images/<sha256>.png        a validated image (from extraction)
    archive/<report_id>/<revision>/quarantine/<sha256>.bin    quarantine evidence (from extraction)
    archive/<report_id>/<revision>/children/<task>.json
    archive/<report_id>/<revision>/{plan.json, manifest.json, manifest_table.csv}
    index/{work,archive,evidence}/<YYYYMMDD>/<report_id>/<epoch minute>-<revision>   deadlines
    audit/<YYYYMMDD>/<HHMMSSffffff>-<random>.json            one deletion event
    claims/<revision>/<generation:06d>.{json,released}       who may run a revision
    reviews/events/<YYYYMMDD>/<HHMMSSffffff>-<random>.json   one quarantine-review decision
    reviews/next/<report_id>/<revision>                      the revision a review made of it
    months/<YYYY-MM>/current/<generation:06d>.json          the month's current revision, each
                                                             change a new generation
    months/<YYYY-MM>/arrivals/<generation:06d>.json         every report content the month saw,
                                                             and when it arrived (intake)

A revision's archive/ objects are on the long clock once its complete manifest is published, and
on the short clock (as working material) until then.
A report id is `<source>-<YYYY-MM>`; a revision is a short hash (see `intake.revision_for`).
Plain strings only: no store access, no clock, no randomness (callers pass those in).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

STAGED = "staged"
WORK = "work"
ARCHIVE = "archive"
AUDIT = "audit"
CLAIMS = "claims"
REVIEWS = "reviews"  # reviews/events/<YYYYMMDD>/...json, reviews/next/<report_id>/<revision>
MONTHS = "months"  # months/<YYYY-MM>/{current,arrivals}/<generation>.json
WORK_INDEX = "index/work"  # short clock: staged source, work objects, unfinished revisions
ARCHIVE_INDEX = "index/archive"  # long clock: an archived revision
EVIDENCE_INDEX = "index/evidence"  # a rejected image's evidence, when kept less than the archive

IMAGES = "images"  # the sections of an archived revision (ArchiveKey.kind)
QUARANTINE = "quarantine"
CHILDREN = "children"
PLAN = "plan.json"
MANIFEST = "manifest.json"
MANIFEST_TABLE = "manifest_table.csv"
OUTCOMES = "outcomes.json"
DRAWS = "draws.json"
_MONTH_LENGTH = len("YYYY-MM")


def report_id(source_name: str, month: str) -> str:
    return f"{source_name}-{month}"


def month_of(report_id: str) -> str:
    """The YYYY-MM a report id ends with ("" for an empty id)."""
    return report_id[-_MONTH_LENGTH:]


def in_month(report_id: str, month: str) -> bool:
    return report_id.endswith(f"-{month}")


def prefix_name(prefix: str) -> str:
    """The last segment of a prefix `Store.list_prefixes` returned: a day, report id, revision."""
    return prefix.rsplit("/", 1)[1]


def staged_key(report_id: str, revision: str) -> str:
    return f"{STAGED}/{report_id}/{revision}.pdf"


def work_prefix(revision: str) -> str:
    return f"{WORK}/{revision}"


def task_prefix(revision: str, task_key: str) -> str:
    return f"{work_prefix(revision)}/{task_key}"


def draws_key(revision: str) -> str:
    return f"{work_prefix(revision)}/{DRAWS}"


def outcomes_key(revision: str, task_key: str) -> str:
    return f"{task_prefix(revision, task_key)}/{OUTCOMES}"


def archive_prefix(report_id: str, revision: str) -> str:
    return f"{ARCHIVE}/{report_id}/{revision}"


def image_key(report_id: str, revision: str, content_hash: str) -> str:
    return f"{archive_prefix(report_id, revision)}/{IMAGES}/{content_hash}.png"


def evidence_key(report_id: str, revision: str, raw_hash: str) -> str:
    return f"{archive_prefix(report_id, revision)}/{QUARANTINE}/{raw_hash}.bin"


def children_key(report_id: str, revision: str, task_key: str) -> str:
    return f"{archive_prefix(report_id, revision)}/{CHILDREN}/{task_key}.json"


def plan_key(report_id: str, revision: str) -> str:
    return f"{archive_prefix(report_id, revision)}/{PLAN}"


def manifest_key(report_id: str, revision: str) -> str:
    return f"{archive_prefix(report_id, revision)}/{MANIFEST}"


def manifest_table_key(report_id: str, revision: str) -> str:
    return f"{archive_prefix(report_id, revision)}/{MANIFEST_TABLE}"


def deadline_key(clock: str, deadline: datetime, report_id: str, revision: str) -> str:
    """A deadline marker in `clock` (WORK_INDEX or ARCHIVE_INDEX), bucketed by its UTC day."""
    minute = int(deadline.timestamp() // 60)
    return f"{clock}/{deadline.astimezone(UTC):%Y%m%d}/{report_id}/{minute}-{revision}"


def audit_key(moment: datetime, token: str) -> str:
    """One audit event, bucketed by the day of `moment`; `token` keeps keys unique."""
    return f"{AUDIT}/{moment:%Y%m%d}/{moment:%H%M%S%f}-{token}.json"


def review_event_key(moment: datetime, token: str) -> str:
    """One quarantine-review decision (an audit event), bucketed by the day of `moment`."""
    return f"{REVIEWS}/events/{moment:%Y%m%d}/{moment:%H%M%S%f}-{token}.json"


def review_successor_key(report_id: str, revision: str) -> str:
    """Which revision a review made of `revision`: written once, so revisions form one line."""
    return f"{REVIEWS}/next/{report_id}/{revision}"


def current_prefix(month: str) -> str:
    return f"{MONTHS}/{month}/current"


def current_key(month: str, generation: int) -> str:
    """One generation of the month's current revision: written once (put_if_absent), so two
    writers cannot both make generation N, and the newest generation is the month's truth."""
    return f"{current_prefix(month)}/{generation:06d}.json"


def arrivals_prefix(month: str) -> str:
    return f"{MONTHS}/{month}/arrivals"


def arrivals_key(month: str, generation: int) -> str:
    return f"{arrivals_prefix(month)}/{generation:06d}.json"


def month_record(key: str) -> tuple[str, str, int] | None:
    """(month, "current" or "arrivals", generation) of a key under months/, else None."""
    parts = key.split("/")
    if len(parts) != 4 or parts[0] != MONTHS or not parts[3].endswith(".json"):
        return None
    try:
        return parts[1], parts[2], int(parts[3].removesuffix(".json"))
    except ValueError:
        return None


def claims_prefix(revision: str) -> str:
    return f"{CLAIMS}/{revision}"


def claim_key(revision: str, generation: int, suffix: str = "json") -> str:
    return f"{claims_prefix(revision)}/{generation:06d}.{suffix}"


def claim_generation(key: str) -> int:
    """The generation a claim key (json or released) is named by."""
    return int(key.rsplit("/", 1)[1].split(".")[0])


@dataclass(frozen=True)
class ArchiveKey:
    report_id: str
    revision: str
    kind: str  # IMAGES, QUARANTINE, CHILDREN, or a file of its own: PLAN, MANIFEST, ...
    name: str = ""  # the object's name within its section ("" for PLAN, MANIFEST, ...)

    @property
    def digest(self) -> str:
        """The sha256 an image or quarantined object is named by."""
        return self.name.removesuffix(".bin").removesuffix(".png")


def parse_archive_key(key: str) -> ArchiveKey:
    parts = key.split("/", 4)
    if len(parts) < 4 or parts[0] != ARCHIVE:
        raise ValueError(f"not an archive key: {key!r}")
    return ArchiveKey(parts[1], parts[2], parts[3], parts[4] if len(parts) == 5 else "")


@dataclass(frozen=True)
class DeadlineKey:
    clock: str
    day: str  # YYYYMMDD (UTC)
    report_id: str
    revision: str
    minute: int  # the deadline, in minutes since the epoch

    @property
    def deadline(self) -> datetime:
        return datetime.fromtimestamp(self.minute * 60, UTC)


def parse_deadline_key(key: str) -> DeadlineKey:
    *clock, day, report_id, name = key.split("/")
    minute, revision = name.split("-", 1)
    return DeadlineKey("/".join(clock), day, report_id, revision, int(minute))


def material_owner(key: str) -> tuple[str, str]:
    """(report_id, revision) of any object under staged/ or work/, well-formed or not (the
    untracked sweep must group whatever it finds): report_id is "" for work objects."""
    parts = key.split("/")
    if parts[0] == STAGED and len(parts) == 3:
        return parts[1], parts[2].removesuffix(".pdf")
    return "", parts[1] if len(parts) > 1 else key

"""The store's key space: the exact layout stores already hold, and parsing as the inverse."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from report_pipeline.core.intake.intake import report_id_for, revision_for
from report_pipeline.core.model import keys
from report_pipeline.core.model.messages import RevisionRef

REPORT = "inbox-2026-10"
REVISION = "0123456789abcdef0123"
HASH = "ab" * 32
TASK = "pages_0001_0070"
DEADLINE = datetime(2026, 11, 3, 4, 5, 59, tzinfo=UTC)  # epoch minute 29894645


def test_every_key_is_built_exactly_as_stores_already_hold_it():
    archive = f"archive/{REPORT}/{REVISION}"
    assert [
        keys.staged_key(REPORT, REVISION),
        keys.work_prefix(REVISION),
        keys.outcomes_key(REVISION, TASK),
        keys.archive_prefix(REPORT, REVISION),
        keys.image_key(REPORT, REVISION, HASH),
        keys.evidence_key(REPORT, REVISION, HASH),
        keys.children_key(REPORT, REVISION, TASK),
        keys.plan_key(REPORT, REVISION),
        keys.manifest_key(REPORT, REVISION),
        keys.manifest_table_key(REPORT, REVISION),
        keys.deadline_key(keys.WORK_INDEX, DEADLINE, REPORT, REVISION),
        keys.deadline_key(keys.ARCHIVE_INDEX, DEADLINE, REPORT, REVISION),
        keys.audit_key(DEADLINE, "0a1b2c3d4e5f"),
        keys.claims_prefix(REVISION),
        keys.claim_key(REVISION, 7),
        keys.claim_key(REVISION, 7, "released"),
        keys.current_key("2026-10", 3),
        keys.arrivals_key("2026-10", 12),
    ] == [
        f"staged/{REPORT}/{REVISION}.pdf",
        f"work/{REVISION}",
        f"work/{REVISION}/{TASK}/outcomes.json",
        archive,
        f"{archive}/images/{HASH}.png",
        f"{archive}/quarantine/{HASH}.bin",
        f"{archive}/children/{TASK}.json",
        f"{archive}/plan.json",
        f"{archive}/manifest.json",
        f"{archive}/manifest_table.csv",
        f"index/work/20261103/{REPORT}/29894645-{REVISION}",
        f"index/archive/20261103/{REPORT}/29894645-{REVISION}",
        "audit/20261103/040559000000-0a1b2c3d4e5f.json",
        f"claims/{REVISION}",
        f"claims/{REVISION}/000007.json",
        f"claims/{REVISION}/000007.released",
        "months/2026-10/current/000003.json",
        "months/2026-10/arrivals/000012.json",
    ]


def test_a_month_record_key_parses_back_and_nothing_else_does():
    assert keys.month_record(keys.current_key("2026-10", 3)) == ("2026-10", "current", 3)
    assert keys.month_record(keys.arrivals_key("2026-10", 12)) == ("2026-10", "arrivals", 12)
    for other in ("months/2026-10/current", "months/2026-10/current/x.json",
                  keys.manifest_key(REPORT, REVISION)):  # fmt: skip
        assert keys.month_record(other) is None


def test_a_deadline_is_bucketed_by_its_utc_day_whatever_its_zone():
    local = datetime(2026, 11, 2, 20, 0, tzinfo=timezone(timedelta(hours=-5)))  # 01:00 UTC
    assert keys.deadline_key(keys.WORK_INDEX, local, "r", "v").startswith("index/work/20261103/")


def test_a_revision_refs_keys_are_the_modules_keys():
    ref = RevisionRef(REPORT, "2026-10", HASH, "v1", REVISION)
    assert (
        ref.staged_key,
        ref.work_prefix,
        ref.archive_prefix,
        ref.plan_key,
        ref.manifest_key,
    ) == (
        keys.staged_key(REPORT, REVISION),
        keys.work_prefix(REVISION),
        keys.archive_prefix(REPORT, REVISION),
        keys.plan_key(REPORT, REVISION),
        keys.manifest_key(REPORT, REVISION),
    )
    assert ref.image_key(HASH) == keys.image_key(REPORT, REVISION, HASH)
    assert ref.evidence_key(HASH) == keys.evidence_key(REPORT, REVISION, HASH)


def test_a_report_id_is_its_source_and_month_and_gives_the_month_back():
    rid = report_id_for("inbox", "2026-10")
    assert rid == keys.report_id("inbox", "2026-10") == REPORT
    assert keys.month_of(rid) == "2026-10" and keys.month_of("") == ""
    assert keys.in_month(rid, "2026-10") and not keys.in_month(rid, "2026-01")
    assert len(revision_for(rid, HASH, "v1")) == len(REVISION)


def test_a_staged_key_names_its_report_and_revision():
    assert keys.material_owner(keys.staged_key(REPORT, REVISION)) == (REPORT, REVISION)


@pytest.mark.parametrize(
    "key, kind, name",
    [
        (keys.image_key(REPORT, REVISION, HASH), keys.IMAGES, f"{HASH}.png"),
        (keys.evidence_key(REPORT, REVISION, HASH), keys.QUARANTINE, f"{HASH}.bin"),
        (keys.children_key(REPORT, REVISION, TASK), keys.CHILDREN, f"{TASK}.json"),
        (keys.plan_key(REPORT, REVISION), keys.PLAN, ""),
        (keys.manifest_key(REPORT, REVISION), keys.MANIFEST, ""),
        (keys.manifest_table_key(REPORT, REVISION), keys.MANIFEST_TABLE, ""),
    ],
)
def test_an_archive_key_parses_back_to_its_revision_kind_and_name(key, kind, name):
    assert keys.parse_archive_key(key) == keys.ArchiveKey(REPORT, REVISION, kind, name)


def test_archived_images_and_evidence_are_named_by_their_hash():
    for key in (keys.image_key(REPORT, REVISION, HASH), keys.evidence_key(REPORT, REVISION, HASH)):
        assert keys.parse_archive_key(key).digest == HASH


@pytest.mark.parametrize("clock", [keys.WORK_INDEX, keys.ARCHIVE_INDEX])
def test_a_deadline_marker_parses_back_to_its_revision_and_minute(clock):
    parsed = keys.parse_deadline_key(keys.deadline_key(clock, DEADLINE, REPORT, REVISION))
    assert parsed == keys.DeadlineKey(clock, "20261103", REPORT, REVISION, 29894645)
    assert parsed.deadline == DEADLINE.replace(second=0)


def test_a_claim_key_gives_its_generation_back():
    assert keys.claim_generation(keys.claim_key(REVISION, 42)) == 42
    assert keys.claim_generation(keys.claim_key(REVISION, 42, "released")) == 42


def test_a_listed_prefix_is_named_by_its_last_segment():
    assert keys.prefix_name(f"archive/{REPORT}") == REPORT
    assert keys.prefix_name("index/work/20261103") == "20261103"


@pytest.mark.parametrize(
    "parse, key",
    [
        (keys.parse_archive_key, f"staged/{REPORT}/{REVISION}.pdf"),
        (keys.parse_archive_key, f"archive/{REPORT}/{REVISION}"),
    ],
)
def test_a_key_from_another_part_of_the_store_is_refused(parse, key):
    with pytest.raises(ValueError):
        parse(key)

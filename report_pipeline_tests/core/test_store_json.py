"""The store's JSON edge: what schema 1 wrote reads back typed and writes back byte for byte
(schema 2 adds only each object's MD5).

`stored_v1/` holds what the code before typed records wrote for `truncated_jpeg.pdf` (one page:
one image quarantined, one archived): the task's outcomes.json and children record, the
revision's manifest.json, and the same manifest once the long clock made it a tombstone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest

from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.decode.child import crash_outcome
from report_pipeline.core.decode.messages import Where
from report_pipeline.core.model import keys, store_json
from report_pipeline.core.model.records import (
    SCHEMA_VERSION,
    ChildRecord,
    Counts,
    Deleted,
    OutcomeRecord,
    tombstone,
)
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import PermanentStorageError
from report_pipeline_tests.core.test_manifest import DEADLINES, REF, record

STORED = Path(__file__).parent / "stored_v1"
WHERE = Where(
    page=1, index=0, origin="xobject", xref=9, width=2, height=3, declared_type="unknown", hidden=""
)


def stored(name: str) -> bytes:
    return (STORED / name).read_bytes()


@pytest.mark.parametrize("name", ["manifest.json", "tombstone.json"])
def test_a_stored_manifest_reads_typed_and_writes_back_the_same_bytes(name):
    manifest = store_json.loads(stored(name))
    assert isinstance(manifest.counts, Counts)
    assert all(isinstance(child, ChildRecord) for child in manifest.children)
    assert store_json.dumps(manifest) == stored(name)


def test_a_tombstone_is_the_manifest_with_every_child_expired():
    live = store_json.loads(stored("manifest.json"))
    tomb = store_json.loads(stored("tombstone.json"))
    assert live.expired_at is None and live.deleted is None
    assert tomb.state == "expired" and isinstance(tomb.deleted, Deleted)
    assert tomb.deleted.objects == 4  # the image, the quarantined stream, children and plan
    assert tombstone(live, tomb.expired_at, tomb.deleted.bytes, 4) == tomb
    assert "expired_at" not in store_json.manifest_to_json(live)


def test_a_tasks_stored_children_read_typed_and_write_back_the_same_bytes(tmp_path):
    store = LocalStore(tmp_path / "store")
    store.put_bytes("work/children.json", stored("children.json"))
    records = store_json.read_children(store, "work/children.json")
    assert len(records) == 2 and all(isinstance(r, ChildRecord) for r in records)
    assert all(r.md5 is None for r in records)  # schema 1: no MD5 recorded
    store_json.write_children(store, "work/again.json", records)
    assert store.get_bytes("work/again.json", 1 << 20) == stored("children.json")


def test_outcomes_from_before_direct_archive_writes_are_refused_and_new_ones_round_trip(tmp_path):
    """v1 outcomes point at images waiting in work/ (`work_key`), which nothing moves into the
    archive any more: the archive step refuses them (a permanent error: re-run the partition).
    Today's outcomes carry each image's archive key and MD5, and read back as written."""
    store = LocalStore(tmp_path / "store")
    store.put_bytes("work/outcomes.json", stored("outcomes.json"))
    with pytest.raises(PermanentStorageError, match="older extractor"):
        store_json.read_outcomes(store, "work/outcomes.json")
    items = json.loads(stored("outcomes.json"))
    for item in items:
        item["object_key"], item["md5"] = item.pop("work_key"), "0" * 32
    store.put_bytes("work/new.json", json.dumps(items).encode())
    records = store_json.read_outcomes(store, "work/new.json")
    assert len(records) == 2 and all(isinstance(r, OutcomeRecord) and r.md5 for r in records)
    store_json.write_outcomes(store, "work/again.json", records)
    assert json.loads(store.get_bytes("work/again.json", 1 << 20)) == items


def test_from_json_of_to_json_is_the_same_manifest():
    records = [record(1, 0), record(1, 1, "quarantined", None), record(2, 0, attempts=2)]
    built = mf.build_manifest(REF, {1: 2, 2: 1}, mf.sequenced(records), DEADLINES, "now", 9)
    for manifest in (built, tombstone(built, "later", 10, 1)):
        assert store_json.manifest_from_json(store_json.manifest_to_json(manifest)) == manifest
        assert store_json.loads(store_json.dumps(manifest)) == manifest


def test_a_manifest_of_another_schema_is_refused():
    with pytest.raises(ValueError, match="unsupported manifest schema"):
        store_json.loads(b'{"schema_version": 99}')
    assert store_json.loads(stored("manifest.json")).schema_version == 1  # still read


def keys_of(value: Any) -> Any:
    """The JSON's shape: every object's keys, in order, down to the leaves."""
    if isinstance(value, dict):
        return [(key, keys_of(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [keys_of(item) for item in value]
    return None


def with_md5(children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Schema 1 children as schema 2 writes them: `md5` (last) on each child with an object."""
    return [{**c, "md5": "0" * 32} if c["object_key"] else c for c in children]


@pytest.mark.slow
def test_the_pipeline_writes_the_schema_1_shape_plus_md5s_and_the_sources_facts(store, run_fixture):
    manifest = run_fixture("truncated_jpeg.pdf")
    report_id, revision = manifest.report_id, manifest.parent_revision
    written = json.loads(store.get_bytes(keys.manifest_key(report_id, revision), 1 << 20))
    v1 = json.loads(stored("manifest.json"))
    facts = {"encrypted": False, "permissions": [], "shared_page_nodes": 0}  # schema 3
    v3 = json.loads(json.dumps({**v1, "children": with_md5(v1["children"]), **facts},
                               sort_keys=True))  # fmt: skip
    assert (
        keys_of(written) == keys_of(v3) and written["schema_version"] == SCHEMA_VERSION
    )  # schemas 4 and 5: v3 + optional keys
    assert {key: written[key] for key in facts} == facts
    in_task = store.get_bytes(keys.children_key(report_id, revision, "page_0001"), 1 << 20)
    assert keys_of(json.loads(in_task)) == keys_of(with_md5(json.loads(stored("children.json"))))


def test_records_become_what_asdict_makes_of_them():
    """record_to_dict is a faster dataclasses.asdict: the same dicts, tuples and values."""
    manifest = store_json.loads(stored("tombstone.json"))  # nested records: counts, deleted, ...
    outcome = crash_outcome(WHERE, "decoder_crashed", "the decoder died with signal 9").outcome
    for item in [manifest, *manifest.children, outcome]:
        assert store_json.record_to_dict(item) == asdict(item)


def test_notes_are_written_only_when_a_child_has_some_and_read_back():
    manifest = store_json.loads(stored("manifest.json"))
    noted = replace(manifest.children[0], notes="embedded ICC profile dropped: 12 bytes ...")
    assert "notes" not in store_json.child_to_json(manifest.children[1])
    assert store_json.child_from_json(store_json.child_to_json(noted)) == noted
    outcome = OutcomeRecord(crash_outcome(WHERE, "decoder_crashed", "").outcome, None, "lease")
    assert "notes" not in store_json.outcome_to_json(outcome)
    with_notes = replace(outcome, outcome=replace(outcome.outcome, notes="dropped"))
    assert store_json.outcome_from_json(store_json.outcome_to_json(with_notes)) == with_notes

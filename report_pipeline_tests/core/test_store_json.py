"""The store's JSON edge: what schema 1 wrote reads back typed and writes back byte for byte.

`stored_v1/` holds what the code before typed records wrote for `truncated_jpeg.pdf` (one page:
one image quarantined, one archived): the task's outcomes.json and children record, the
revision's manifest.json, and the same manifest once the long clock made it a tombstone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from report_pipeline.core.archive import keys, store_json
from report_pipeline.core.archive import manifest as mf
from report_pipeline.core.archive.records import ChildRecord, Counts, Deleted, OutcomeRecord
from report_pipeline.core.storage.store import LocalStore
from report_pipeline_tests.core.test_manifest import DEADLINES, REF, record

STORED = Path(__file__).parent / "stored_v1"


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
    assert mf.tombstone(live, tomb.expired_at, tomb.deleted.bytes, 4) == tomb
    assert "expired_at" not in store_json.manifest_to_json(live)


@pytest.mark.parametrize(
    ("name", "read", "write", "kind"),
    [("outcomes.json", store_json.read_outcomes, store_json.write_outcomes, OutcomeRecord),
     ("children.json", store_json.read_children, store_json.write_children, ChildRecord)],
)  # fmt: skip
def test_a_tasks_stored_records_read_typed_and_write_back_the_same_bytes(
    tmp_path, name, read, write, kind
):
    store = LocalStore(tmp_path / "store")
    store.put_bytes(f"work/{name}", stored(name))
    records = read(store, f"work/{name}")
    assert len(records) == 2 and all(isinstance(r, kind) for r in records)
    write(store, "work/again.json", records)
    assert store.get_bytes("work/again.json", 1 << 20) == stored(name)


def test_from_json_of_to_json_is_the_same_manifest():
    records = [record(1, 0), record(1, 1, "quarantined", None), record(2, 0, attempts=2)]
    built = mf.build_manifest(REF, {1: 2, 2: 1}, mf.sequenced(records), DEADLINES, "now", 9)
    for manifest in (built, mf.tombstone(built, "later", 10, 1)):
        assert store_json.manifest_from_json(store_json.manifest_to_json(manifest)) == manifest
        assert store_json.loads(store_json.dumps(manifest)) == manifest


def test_a_manifest_of_another_schema_is_refused():
    with pytest.raises(ValueError, match="unsupported manifest schema"):
        store_json.loads(b'{"schema_version": 99}')


def keys_of(value: Any) -> Any:
    """The JSON's shape: every object's keys, in order, down to the leaves."""
    if isinstance(value, dict):
        return [(key, keys_of(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [keys_of(item) for item in value]
    return None


def test_the_pipeline_writes_the_schema_1_shape(store, run_fixture):
    manifest = run_fixture("truncated_jpeg.pdf")
    report_id, revision = manifest.report_id, manifest.parent_revision
    written = json.loads(store.get_bytes(keys.manifest_key(report_id, revision), 1 << 20))
    assert keys_of(written) == keys_of(json.loads(stored("manifest.json")))
    in_task = store.get_bytes(keys.children_key(report_id, revision, "page_0001"), 1 << 20)
    assert keys_of(json.loads(in_task)) == keys_of(json.loads(stored("children.json")))

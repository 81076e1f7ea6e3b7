import stat

import pytest

from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.store import PermanentStorageError


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_objects_are_private_and_written_atomically(store: LocalStore):
    store.put_bytes("archive/r/rev/images/abc.png", b"png")
    path = store.root / "archive/r/rev/images/abc.png"
    assert mode(path) == 0o600
    assert mode(path.parent) == mode(store.root) == 0o700
    assert not list(path.parent.glob(".tmp-*")) and not list((store.root / ".partial").iterdir())
    assert store.get_bytes("archive/r/rev/images/abc.png", 10) == b"png"


@pytest.mark.parametrize("key", ["../escape", "/abs/key", "a/../b", "a//b", "a/./b", "", "a b"])
def test_keys_that_could_leave_the_store_are_refused(store: LocalStore, key):
    with pytest.raises(PermanentStorageError, match="invalid store key"):
        store.put_bytes(key, b"x")


def test_delete_is_idempotent_and_prunes_empty_folders(store: LocalStore):
    store.put_bytes("work/rev/task/x.png", b"x")
    assert store.delete("work/rev/task/x.png") is True
    assert store.delete("work/rev/task/x.png") is False  # already gone counts as done
    assert not (store.root / "work").exists()


def test_reads_are_capped(store: LocalStore, tmp_path):
    store.put_bytes("k", b"0123456789")
    with pytest.raises(PermanentStorageError, match="larger than"):
        store.get_bytes("k", 5)
    with pytest.raises(PermanentStorageError, match="larger than"):
        store.fetch("k", tmp_path / "out", 5)
    with pytest.raises(PermanentStorageError, match="missing object"):
        store.get_bytes("nope", 5)


def test_list_skips_an_older_versions_partial_writes(store: LocalStore):
    store.put_bytes("p/a", b"1")
    (store.root / "p" / ".tmp-deadbeef").write_bytes(b"partial")
    assert [(o.key, o.size) for o in store.list("p")] == [("p/a", 1)]

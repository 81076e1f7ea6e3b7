"""The `Store` contract, run on LocalStore and on S3Store against a real S3 API server (moto on
loopback): one key space, privacy, idempotent writes and deletes, one winner among racing
creators, capped reads and paginated listings. S3-only failure classification is in
test_s3_errors.py; the janitor, audit stream, checks and claims run on both stores in
test_retention.py and test_claims.py."""

from __future__ import annotations

import hashlib
import stat
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import MissingObject, PermanentStorageError

pytestmark = pytest.mark.slow

LAYOUT = {
    "staged/abc/source.pdf": b"%PDF-1.7",
    "work/rev1/task-1/q-1.bin": b"quarantine",
    "archive/inbox-2026-10/rev1/images/aa.png": b"png-a",
    "archive/inbox-2026-10/rev1/images/bb.png": b"png-bb",
    "archive/inbox-2026-10/rev1/manifest.json": b"{}",
    "archive/inbox-2026-11/rev2/manifest.json": b"{}",
}


def put_layout(store) -> None:
    for key, data in LAYOUT.items():
        store.put_bytes(key, data)


def assert_private(store, key: str) -> None:
    """Local: 0600 file in 0700 folders up to the root. S3: SSE-AES256 and only the owner's
    FULL_CONTROL grant (no AllUsers/AuthenticatedUsers)."""
    if isinstance(store, LocalStore):
        path = store.root / key
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        while path != store.root:
            path = path.parent
            assert stat.S_IMODE(path.stat().st_mode) == 0o700
        return
    full = store.prefix + key
    head = store.client.head_object(Bucket=store.bucket, Key=full)
    assert head["ServerSideEncryption"] == "AES256", key
    grants = store.client.get_object_acl(Bucket=store.bucket, Key=full)["Grants"]
    assert [(g["Grantee"]["Type"], g["Permission"]) for g in grants] == [
        ("CanonicalUser", "FULL_CONTROL")
    ]


def test_layout_is_one_key_space(any_store):
    put_layout(any_store)
    listed = sorted((o.key, o.size) for o in any_store.list("archive"))
    assert listed == sorted((k, len(v)) for k, v in LAYOUT.items() if k.startswith("archive/"))
    assert any_store.list_prefixes("archive") == ["archive/inbox-2026-10", "archive/inbox-2026-11"]
    assert any_store.list_prefixes("archive/inbox-2026-10") == ["archive/inbox-2026-10/rev1"]
    assert [o.key for o in any_store.list("archive/inbox-2026-1")] == []  # folders, not strings
    assert any_store.list_prefixes("nothing") == [] and list(any_store.list("nothing")) == []
    assert any_store.exists("staged/abc/source.pdf") and not any_store.exists("staged/abc")
    assert any_store.size("archive/inbox-2026-10/rev1/images/bb.png") == 6
    assert all(o.modified > 0 for o in any_store.list("work"))


def test_s3_keys_live_under_the_prefix(s3):
    store = S3Store(s3.client, s3.bucket, prefix="/team/pipeline/")
    put_layout(store)
    raw = s3.client.list_objects_v2(Bucket=s3.bucket)["Contents"]
    assert sorted(o["Key"] for o in raw) == sorted(f"team/pipeline/{k}" for k in LAYOUT)
    assert S3Store(s3.client, s3.bucket).list_prefixes("team") == ["team/pipeline"]


@pytest.mark.parametrize("key", ["../escape", "/abs/key", "a/../b", "a//b", "a/./b", "", "a b"])
def test_keys_that_could_leave_the_store_are_refused(any_store, key):
    with pytest.raises(PermanentStorageError, match="invalid store key"):
        any_store.put_bytes(key, b"x")


def test_every_write_is_private(any_store, tmp_path):
    source = tmp_path / "report.pdf"
    source.write_bytes(b"%PDF-1.7 report")
    any_store.put_bytes("archive/r/rev/images/a.png", b"png")
    any_store.put_file("staged/rev/source.pdf", source)
    any_store.put_if_absent("claims/rev/000001.json", b"{}")
    any_store.put_if_absent("archive/r/rev/images/b.png", b"png-b")
    for key in ["archive/r/rev/images/a.png", "staged/rev/source.pdf", "claims/rev/000001.json",
                "archive/r/rev/images/b.png"]:  # fmt: skip
        assert_private(any_store, key)
    assert any_store.get_bytes("staged/rev/source.pdf", 100) == b"%PDF-1.7 report"


def test_writes_and_deletes_are_idempotent(any_store):
    any_store.put_bytes("archive/a.png", b"one")
    any_store.put_bytes("archive/a.png", b"one")  # a retried write
    assert any_store.put_if_absent("claims/x.json", b"first") is True
    assert any_store.put_if_absent("claims/x.json", b"second") is False
    assert any_store.get_bytes("claims/x.json", 10) == b"first"  # untouched
    assert any_store.delete("archive/a.png") is True
    assert any_store.delete("archive/a.png") is False  # already gone counts as done
    assert not any_store.exists("archive/a.png")


def test_deleting_many_at_once_means_the_same_as_one_at_a_time(any_store):
    for name in ("a", "b", "c"):
        any_store.put_bytes(f"archive/{name}.png", name.encode())
    any_store.delete_many(["archive/a.png", "archive/nothing.png", "archive/b.png"])
    any_store.delete_many(["archive/a.png"])  # already gone counts as done
    any_store.delete_many([])
    assert [o.key for o in any_store.list("archive")] == ["archive/c.png"]


def test_a_content_addressed_write_has_one_winner_and_a_retry_writes_nothing(any_store):
    """Extraction writes each image once to its content-addressed key with put_if_absent: a
    retried or repeated write leaves the first object as it was."""
    key = "archive/r/rev/images/aa.png"
    assert any_store.put_if_absent(key, b"png") is True
    before = next(iter(any_store.list("archive/r/rev/images")))
    assert any_store.put_if_absent(key, b"png") is False  # a retry after success
    assert list(any_store.list("archive/r/rev/images")) == [before]  # not rewritten
    assert any_store.get_bytes(key, 10) == b"png"


def test_a_listed_md5_is_the_stored_bytes_md5_or_nothing(any_store, tmp_path):
    """S3 lists the MD5 it computed from the stored bytes (the ETag of a single-part SSE-S3
    upload); LocalStore lists none (a caller re-reads the bytes)."""
    source = tmp_path / "report.pdf"
    source.write_bytes(b"%PDF-1.7 report")
    any_store.put_bytes("archive/r/rev/images/a.png", b"png-a")
    any_store.put_if_absent("claims/rev/000001.json", b"{}")
    any_store.put_file("staged/r/rev.pdf", source)
    stored = {"archive/r/rev/images/a.png": b"png-a", "claims/rev/000001.json": b"{}",
              "staged/r/rev.pdf": b"%PDF-1.7 report"}  # fmt: skip
    listed = {o.key: o.md5 for prefix in ("archive", "claims", "staged")
              for o in any_store.list(prefix)}  # fmt: skip
    want = {key: hashlib.md5(data).hexdigest() for key, data in stored.items()}
    assert listed == (want if isinstance(any_store, S3Store) else dict.fromkeys(stored, ""))


def test_put_if_absent_has_one_winner_among_threads(any_store):
    barrier = threading.Barrier(12)

    def create(n: int) -> bool:
        barrier.wait()
        return any_store.put_if_absent("claims/rev/000001.json", f"claimer-{n}".encode())

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(create, range(12)))
    (winner,) = [n for n, won in enumerate(results) if won]
    assert any_store.get_bytes("claims/rev/000001.json", 100) == f"claimer-{winner}".encode()


def test_reads_are_capped(any_store, tmp_path):
    any_store.put_bytes("k", b"0123456789")
    assert any_store.get_bytes("k", 10) == b"0123456789"  # exactly the cap is allowed
    with pytest.raises(PermanentStorageError, match="larger than 5 bytes"):
        any_store.get_bytes("k", 5)
    with pytest.raises(PermanentStorageError, match="larger than 9 bytes"):
        any_store.fetch("k", tmp_path / "out", 9)
    any_store.fetch("k", tmp_path / "ok", 10)
    assert (tmp_path / "ok").read_bytes() == b"0123456789"
    assert stat.S_IMODE((tmp_path / "ok").stat().st_mode) == 0o600
    for read in (lambda: any_store.get_bytes("nope", 5), lambda: any_store.size("nope"),
                 lambda: any_store.fetch("nope", tmp_path / "x", 5)):  # fmt: skip
        with pytest.raises(MissingObject, match="missing object") as caught:
            read()
        assert isinstance(caught.value, PermanentStorageError)  # never retried


def test_listings_paginate(any_store):
    keys = [f"audit/2026-10-01/{n:04d}.json" for n in range(11)]
    for key in keys:
        any_store.put_bytes(key, b"{}")
    for day in ("2026-10-02", "2026-10-03", "2026-10-04"):
        any_store.put_bytes(f"audit/{day}/0000.json", b"{}")
    calls = []
    if isinstance(any_store, S3Store):
        any_store.page_size = 3  # as if S3's 1,000-key pages were three keys long
        any_store.client.meta.events.register(
            "before-call.s3.ListObjectsV2", lambda **kw: calls.append(1)
        )
    assert sorted(o.key for o in any_store.list("audit/2026-10-01")) == keys
    assert len(any_store.list_prefixes("audit")) == 4
    if isinstance(any_store, S3Store):
        assert len(calls) == 4 + 2  # 11 keys in pages of 3, then 4 folders in pages of 3


def test_copy_puts_the_same_private_bytes_at_a_second_key_and_leaves_an_existing_one(any_store):
    any_store.put_bytes("archive/r/a/images/x.png", b"png-x")
    any_store.copy("archive/r/a/images/x.png", "archive/r/b/images/x.png")
    any_store.copy("archive/r/a/images/x.png", "archive/r/b/images/x.png")  # again: unchanged
    assert any_store.get_bytes("archive/r/b/images/x.png", 10) == b"png-x"
    assert_private(any_store, "archive/r/b/images/x.png")
    (listed,) = any_store.list("archive/r/b/")
    if isinstance(any_store, S3Store):  # the copy's ETag is its bytes' MD5, as a PutObject's
        assert listed.md5 == hashlib.md5(b"png-x").hexdigest()
    any_store.delete("archive/r/a/images/x.png")
    assert any_store.get_bytes("archive/r/b/images/x.png", 10) == b"png-x"
    with pytest.raises(MissingObject):
        any_store.copy("archive/r/a/images/x.png", "archive/r/c/images/x.png")

"""What the S3 store asks the server for (moto on loopback): a batch of moves is one listing per
destination folder, a COPY per absent object and one DeleteObjects per 1,000 sources (HEADs only
for a lone or crowded folder); per-key failures inside a 200 answer are classified."""

from __future__ import annotations

import base64
import hashlib
from collections import Counter

import pytest
from botocore.awsrequest import AWSResponse

from report_pipeline.core.storage import s3_store
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError
from report_pipeline_tests.s3 import Raw


def counted(s3) -> tuple[S3Store, Counter]:
    calls: Counter = Counter()
    s3.client.meta.events.register("before-call.s3", lambda model, **kw: calls.update([model.name]))
    return S3Store(s3.client, s3.bucket, prefix="pipeline"), calls


def test_moves_list_each_folder_copy_what_is_absent_and_batch_deletes(s3, monkeypatch):
    monkeypatch.setattr(s3_store, "DELETE_BATCH", 4)  # as if 1,000 were four
    store, calls = counted(s3)
    moves = [(f"work/t/{n}.png", f"archive/{n}.png") for n in range(10)]
    for src, _ in moves:
        store.put_bytes(src, b"png")
    assert not store.exists("work/t/none.png")  # the store's one bucket check (on a first 404)
    calls.clear()
    assert store.promote_many(moves) == [True] * 10
    assert calls == {"ListObjectsV2": 1, "CopyObject": 10, "DeleteObjects": 3}
    calls.clear()
    assert store.promote_many(moves) == [False] * 10  # a retry: nothing copied again
    assert calls == {"ListObjectsV2": 1, "DeleteObjects": 3}
    assert [o.key for o in store.list("work")] == []


def test_a_crowded_or_lone_destination_folder_is_headed_not_listed(s3):
    store, calls = counted(s3)
    store.page_size = 2
    for n in range(10):
        store.put_bytes(f"archive/crowded/{n}.png", b"png")
    moves = [("work/t/a.png", "archive/crowded/a.png"), ("work/t/b.png", "archive/crowded/b.png"),
             ("work/t/c.png", "archive/lone/c.png")]  # fmt: skip
    for src, _ in moves:
        store.put_bytes(src, b"png")
    assert not store.exists("work/t/none.png")
    calls.clear()
    assert store.promote_many(moves) == [True, True, True]
    assert calls["HeadObject"] == 3 and calls["CopyObject"] == 3
    assert calls["ListObjectsV2"] <= 4  # stopped early: 2-key pages, more than 2 * 2 + 2 seen


def deleted_with_errors(code: str):
    body = (
        "<DeleteResult><Error><Key>pipeline/work/t/a.png</Key>"
        f"<Code>{code}</Code><Message>injected</Message></Error></DeleteResult>"
    ).encode()

    def handler(request, **_kwargs):
        return AWSResponse(request.url, 200, {"Content-Type": "application/xml"}, Raw(body))

    return handler


@pytest.mark.parametrize(
    ("code", "kind"), [("SlowDown", TransientStorageError), ("AccessDenied", PermanentStorageError)]
)
def test_per_key_delete_errors_are_classified(s3, code, kind):
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    s3.client.meta.events.register("before-send.s3.DeleteObjects", deleted_with_errors(code))
    with pytest.raises(kind, match=f"delete work/t/a.png failed: {code}") as caught:
        store.delete_many(["work/t/a.png", "work/t/b.png"])
    assert s3.endpoint not in str(caught.value)


def test_every_write_of_bytes_sends_their_md5(s3):
    """Content-MD5 on put_bytes and put_if_absent: S3 refuses a body that arrives different
    (BadDigest), so the ETag a listing returns is the MD5 of the bytes the caller had."""
    store, sent = S3Store(s3.client, s3.bucket, prefix="pipeline"), []
    s3.client.meta.events.register(
        "before-send.s3.PutObject", lambda request, **_: sent.append(request.headers["Content-MD5"])
    )
    store.put_bytes("archive/a.png", b"png-a")
    store.put_if_absent("claims/rev/000001.json", b"{}")
    assert sent == [base64.b64encode(hashlib.md5(d).digest()) for d in (b"png-a", b"{}")]

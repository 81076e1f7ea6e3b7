"""S3 failures are classified inside the adapter, against the real (moto) server: a missing
bucket is permanent, an unreachable endpoint is transient, and answers injected at the storage
boundary (botocore's `before-send` event) are sorted into transient and permanent. Messages name
the store key, never the endpoint, the source path or the bytes."""

from __future__ import annotations

import pytest

from devstack import loopback
from report_pipeline.core.storage.s3_errors import classify
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError
from report_pipeline_tests import s3 as s3_helpers

pytestmark = pytest.mark.slow


def faulty_store(s3, status: int, code: str) -> S3Store:
    client = s3_helpers.client(s3.endpoint, attempts=1)
    client.meta.events.register("before-send.s3", s3_helpers.answer(status, code))
    return S3Store(client, s3.bucket)


OPERATIONS = {
    "put": lambda st: st.put_bytes("archive/r/a.png", b"secret-bytes"),
    "create": lambda st: st.put_if_absent("claims/r/000001.json", b"secret-bytes"),
    "get": lambda st: st.get_bytes("archive/r/a.png", 100),
    "exists": lambda st: st.exists("archive/r/a.png"),
    "delete": lambda st: st.delete("archive/r/a.png"),
    "delete_many": lambda st: st.delete_many(["archive/r/a.png", "archive/r/b.png"]),
    "list": lambda st: list(st.list("archive/r")),
}


@pytest.mark.parametrize(
    ("status", "code"),
    [(503, "SlowDown"), (400, "Throttling"), (400, "RequestLimitExceeded"),
     (500, "InternalError"), (503, "ServiceUnavailable"), (502, "BadGateway")],
)  # fmt: skip
def test_throttling_and_5xx_are_transient(s3, status, code):
    store = faulty_store(s3, status, code)
    for name, operation in OPERATIONS.items():
        with pytest.raises(TransientStorageError) as caught:
            operation(store)
        message = str(caught.value)
        assert name in {"exists", "delete"} or "archive/r" in message or "claims/r" in message
        assert s3.endpoint not in message and "secret-bytes" not in message


@pytest.mark.parametrize(
    ("status", "code"),
    [(403, "AccessDenied"), (403, "InvalidAccessKeyId"), (403, "SignatureDoesNotMatch")],
)
def test_access_errors_are_permanent(s3, status, code):
    store = faulty_store(s3, status, code)
    for operation in OPERATIONS.values():
        with pytest.raises(PermanentStorageError, match=code):
            operation(store)


def test_a_missing_bucket_is_permanent(s3):
    store = S3Store(s3.client, "no-such-bucket-here")
    for name, operation in OPERATIONS.items():
        with pytest.raises(PermanentStorageError) as caught:
            operation(store)
        assert "NoSuchBucket" in str(caught.value), name


def test_an_unreachable_endpoint_is_transient():
    closed = f"http://127.0.0.1:{loopback.free_port()}"  # nothing listens there
    store = S3Store(s3_helpers.client(closed, attempts=1, timeout=2), "bucket")
    for operation in OPERATIONS.values():
        with pytest.raises(TransientStorageError, match="EndpointConnectionError") as caught:
            operation(store)
        assert closed not in str(caught.value)


def test_a_connection_reset_mid_download_is_transient(s3, tmp_path):
    store = S3Store(s3.client, s3.bucket)
    store.put_bytes("staged/r/source.pdf", b"%PDF-1.7 and the rest")

    def reset(parsed, **_kwargs):
        parsed["Body"] = s3_helpers.ResetBody(parsed["Body"])

    s3.client.meta.events.register("after-call.s3.GetObject", reset)
    with pytest.raises(TransientStorageError, match="read staged/r/source.pdf.*ConnectionReset"):
        store.fetch("staged/r/source.pdf", tmp_path / "out", 1000)


def test_other_exceptions_are_not_storage_errors():
    assert classify(ValueError("a bug"), "get", "k") is None

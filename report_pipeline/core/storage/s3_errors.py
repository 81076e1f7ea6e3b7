"""One place that says which S3 failures are worth retrying, for the S3 store and the S3 source.

Transient (a bounded retry may succeed): throttling (SlowDown, Throttling, RequestLimitExceeded,
HTTP 429 or 503), any other 5xx, request timeouts, and the connection failing, timing out or
being reset, before or during a response body. Permanent: every other error S3 answers with
(AccessDenied, NoSuchBucket, NoSuchKey, InvalidAccessKeyId, SignatureDoesNotMatch, ...), missing
credentials and invalid parameters.

Messages name the operation, a caller-chosen label (a store key, or a source's name: never a
source's object key, which may reveal where reports come from) and the S3 error code. Never
botocore's own text: some of it quotes the endpoint URL with the bucket and object key in it.
The original exception is not chained for the same reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore import exceptions as bx

from report_pipeline.core.storage.store import (
    PermanentStorageError,
    StorageError,
    TransientStorageError,
)

THROTTLING = {
    "SlowDown", "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottled",
    "RequestLimitExceeded", "TooManyRequestsException", "BandwidthLimitExceeded",
}  # fmt: skip
TRANSIENT_CODES = THROTTLING | {
    "RequestTimeout", "RequestTimeoutException", "InternalError", "ServiceUnavailable",
    "PriorRequestNotComplete", "OperationAborted",
    "ConditionalRequestConflict",  # 409: a concurrent conditional write to the key; try again
}  # fmt: skip
# Raised before an answer arrives or while its body is read: timeouts, refused, closed or reset
# connections, a body cut short. OSError covers a reset seen below botocore's wrappers.
NETWORK = (bx.HTTPClientError, bx.ConnectionError, bx.IncompleteReadError, OSError)


def error_code(exc: BaseException) -> str:
    """S3's error code ('NoSuchKey', 'SlowDown', '404' for a HEAD), or '' if S3 did not answer."""
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def http_status(exc: BaseException) -> int | None:
    return getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")


def is_missing(exc: BaseException) -> bool:
    """S3 said 'not found' (NoSuchKey, or a bare 404 from a HEAD). A 403 is not: without
    ListBucket permission S3 answers 403 for a missing key too, and that is AccessDenied."""
    return isinstance(exc, bx.ClientError) and (
        error_code(exc) in {"NoSuchKey", "404", "NotFound"} or http_status(exc) == 404
    )


def is_precondition_failed(exc: BaseException) -> bool:
    """A conditional write (`If-None-Match: *`) found the key taken."""
    return isinstance(exc, bx.ClientError) and (
        error_code(exc) == "PreconditionFailed" or http_status(exc) == 412
    )


def classify(exc: BaseException, action: str, label: str) -> StorageError | None:
    """The StorageError for an S3 failure, or None when `exc` is not one (a bug: let it raise)."""
    if isinstance(exc, bx.ClientError):
        code, status = error_code(exc), http_status(exc) or 0
        transient = code in TRANSIENT_CODES or status == 429 or status >= 500
        kind = TransientStorageError if transient else PermanentStorageError
        return kind(f"S3 {action} {label} failed: {code or 'error'} (HTTP {status})")
    if isinstance(exc, NETWORK):
        return TransientStorageError(f"S3 {action} {label} failed: {type(exc).__name__}")
    if isinstance(exc, bx.BotoCoreError):  # no credentials, invalid parameters, ...
        return PermanentStorageError(f"S3 {action} {label} failed: {type(exc).__name__}")
    return None


def batch_error(action: str, errors: list[dict], prefix_len: int) -> StorageError:
    """The StorageError for a batch request's per-key failures (DeleteObjects answers 200 and
    lists them): transient only when every one is; named by the first store key."""
    codes = [str(error.get("Code", "")) for error in errors]
    transient = all(code in TRANSIENT_CODES for code in codes)
    kind = TransientStorageError if transient else PermanentStorageError
    label = str(errors[0].get("Key", ""))[prefix_len:]
    return kind(f"S3 {action} {label} failed: {codes[0] or 'error'} ({len(errors)} key(s))")


@contextmanager
def mapped(action: str, label: str) -> Iterator[None]:
    """Turn S3 failures inside the block into Transient/PermanentStorageError."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:
        error = classify(exc, action, label)
        if error is None:
            raise
        raise error from None


class MappedBody:
    """A response body whose read errors (resets, timeouts mid-download) are classified like
    any call's. Closing it closes the body (and drops the connection if unread)."""

    def __init__(self, body: Any, action: str, label: str) -> None:
        self._body, self._action, self._label = body, action, label

    def read(self, size: int = -1) -> bytes:
        with mapped(self._action, self._label):
            return self._body.read(size)

    def close(self) -> None:
        self._body.close()

    def __enter__(self) -> MappedBody:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""The store on S3: the same key space and semantics as `LocalStore`, under `<bucket>/<prefix>/`.

Privacy: every write sends `ServerSideEncryption=AES256` and no ACL, so objects are owned by
the bucket owner and readable only through IAM. The bucket must also block public access (all
four Block Public Access settings on) and should have default encryption; this store does not
change bucket settings.

Writes are idempotent: `put_if_absent` is a PutObject with `If-None-Match: *` (412 Precondition
Failed means someone else created the key: False); archive keys are content-addressed, so a
repeated `put_bytes` writes the same bytes. Reads stream with the byte cap and
count what arrives; a stated length is never trusted. Errors are classified by `s3_errors`.

Integrity: `put_bytes` and `put_if_absent` send the body's MD5 (Content-MD5; extraction passes
the MD5 it already computed for the manifest), so S3 stores the bytes the caller hashed or
refuses them, and a listing gives that MD5 back as the ETag (`ObjectInfo.md5`): the archive check
compares it with the MD5 recorded at upload instead of reading every object again. `put_file`
streams the file once with a trailing CRC32 that S3 checks.

Speed: each request waits on the network, so the store says `io_workers` (16, within the boto3
client's connection pool; the client is thread-safe) and core runs a step's per-object calls
side by side (`parallel_io`), and asks for less: one PutObject per archived object (extraction
writes it straight to its content-addressed key), deletes in DeleteObjects batches of 1,000,
and listings instead of a HEAD or GET per object.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from report_pipeline.core.storage import s3_errors
from report_pipeline.core.storage.s3_errors import (
    MappedBody,
    is_missing,
    is_precondition_failed,
    mapped,
)
from report_pipeline.core.storage.store import (
    MissingObject,
    ObjectInfo,
    PermanentStorageError,
    check_key,
    fetch_into,
    read_capped,
)

PRIVATE = {"ServerSideEncryption": "AES256"}
_PLAIN_ETAG = re.compile(r'^"?([0-9a-f]{32})"?$')  # a single-part upload's ETag: the MD5
DELETE_BATCH = 1000  # keys per DeleteObjects request
# concurrent requests per step (parallel_io), within the client's connection pool (the
# production clients' is as large, defs/deployment/s3_clients.py; botocore's default is 10):
# at 100 ms a round trip, 8 uploads at a time set the pace of a photo-heavy extraction
IO_WORKERS = 16


class S3Store:
    """A private key space in one bucket. `client` is a boto3 S3 client (Dagster builds it from
    `dagster_aws.s3.S3Resource`; its retries and timeouts are the client's configuration)."""

    def __init__(self, client: Any, bucket: str, prefix: str = "", page_size: int = 1000) -> None:
        self.client, self.bucket, self.page_size = client, bucket, page_size
        self.prefix = f"{check_key(prefix.strip('/'))}/" if prefix.strip("/") else ""
        self._bucket_seen = False
        config = getattr(getattr(client, "meta", None), "config", None)
        pool = getattr(config, "max_pool_connections", None) or IO_WORKERS
        self.io_workers = max(1, min(IO_WORKERS, int(pool)))

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def _head(self, key: str) -> dict | None:
        """The object's metadata, or None if it does not exist (a missing bucket raises)."""
        with mapped("head", key):
            try:
                head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            except Exception as exc:
                if not is_missing(exc):
                    raise
                head = None
            if head is None and not self._bucket_seen:
                self._check_bucket()  # a HEAD's 404 does not say whether the bucket is missing
            self._bucket_seen = True
            return head

    def _check_bucket(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except Exception as exc:
            if is_missing(exc):
                raise PermanentStorageError("S3 bucket not found: NoSuchBucket") from None
            raise

    def put_bytes(self, key: str, data: bytes) -> None:
        with mapped("put", key):
            self.client.put_object(
                Bucket=self.bucket, Key=self._key(key), Body=data, **_md5(data), **PRIVATE
            )

    def put_file(self, key: str, path: Path) -> None:
        """A file streamed once: its CRC32 travels as a trailing checksum S3 checks (a
        Content-MD5 would need the whole file read before the upload starts)."""
        with open(path, "rb") as body, mapped("put", key):
            self.client.put_object(
                Bucket=self.bucket, Key=self._key(key), Body=body, ChecksumAlgorithm="CRC32",
                **PRIVATE,
            )  # fmt: skip

    def put_if_absent(self, key: str, data: bytes, md5: str = "") -> bool:
        """True if this call created `key`; False if an object was already there (untouched)."""
        with mapped("create", key):
            try:
                self.client.put_object(
                    Bucket=self.bucket, Key=self._key(key), Body=data, IfNoneMatch="*",
                    **_md5(data, md5), **PRIVATE,
                )  # fmt: skip
            except Exception as exc:
                if is_precondition_failed(exc):
                    return False
                raise
        return True

    def copy(self, src: str, dst: str) -> None:
        """One CopyObject inside the bucket, encrypted like every write; a missing `src` is
        MissingObject."""
        source = {"Bucket": self.bucket, "Key": self._key(src)}
        with mapped("copy", src):
            try:
                self.client.copy_object(
                    Bucket=self.bucket, Key=self._key(dst), CopySource=source, **PRIVATE
                )
            except Exception as exc:
                if is_missing(exc):
                    raise MissingObject(f"missing object {src}") from None
                raise

    def _open(self, key: str) -> MappedBody:
        with mapped("get", key):
            try:
                body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
            except Exception as exc:
                if s3_errors.error_code(exc) == "NoSuchKey":
                    raise MissingObject(f"missing object {key}") from None
                raise
        return MappedBody(body, "read", key)

    def get_bytes(self, key: str, max_bytes: int) -> bytes:
        out = io.BytesIO()
        with self._open(key) as body:
            read_capped(key, body, out, max_bytes)  # until EOF or one piece past the cap
        return out.getvalue()

    def fetch(self, key: str, dest: Path, max_bytes: int) -> None:
        """Stream into a private file, counting bytes: the object's stated size is not trusted."""
        fetch_into(key, self._open(key), dest, max_bytes)

    def exists(self, key: str) -> bool:
        return self._head(key) is not None

    def size(self, key: str) -> int:
        head = self._head(key)
        if head is None:
            raise MissingObject(f"missing object {key}")
        return int(head["ContentLength"])

    def delete(self, key: str) -> bool:
        """Idempotent: an object that is already gone counts as deleted (returns False)."""
        if self._head(key) is None:
            return False
        with mapped("delete", key):
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
        return True

    def delete_many(self, keys: Iterable[str]) -> None:
        """Idempotent, like `delete`: DeleteObjects, up to 1,000 keys a request (S3's limit)."""
        keys = list(keys)
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start : start + DELETE_BATCH]
            label = f"{batch[0]} and {len(batch) - 1} more" if len(batch) > 1 else batch[0]
            objects = [{"Key": self._key(key)} for key in batch]
            with mapped("delete", label):
                answer = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True}
                )
            if errors := answer.get("Errors"):
                raise s3_errors.batch_error("delete", errors, len(self.prefix))

    def _pages(self, prefix: str, **params: Any) -> Iterator[dict]:
        full = self.prefix + (f"{check_key(prefix.strip('/'))}/" if prefix.strip("/") else "")
        paginator = self.client.get_paginator("list_objects_v2")
        with mapped("list", prefix or "/"):
            pages = paginator.paginate(
                Bucket=self.bucket, Prefix=full, PaginationConfig={"PageSize": self.page_size},
                **params,
            )  # fmt: skip
            yield from pages

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Each object with its size, time and, when its ETag is a single-part upload's, the MD5
        S3 computed from the bytes it stored (every write here is single-part, SSE-S3)."""
        for page in self._pages(prefix):
            for item in page.get("Contents", []):
                key = item["Key"][len(self.prefix) :]
                etag = _PLAIN_ETAG.match(str(item.get("ETag", "")))
                yield ObjectInfo(
                    key, int(item["Size"]), item["LastModified"].timestamp(),
                    etag.group(1) if etag else "",
                )  # fmt: skip

    def list_prefixes(self, prefix: str) -> list[str]:
        """The next level of `prefix/` (a delimiter listing), without descending."""
        return sorted(
            common["Prefix"][len(self.prefix) :].rstrip("/")
            for page in self._pages(prefix, Delimiter="/")
            for common in page.get("CommonPrefixes", [])
        )

    def abandoned_writes(self, before: float) -> list[ObjectInfo]:
        """None: every write is one PutObject, which S3 stores whole or not at all (no
        multipart uploads, so no incomplete parts to abort)."""
        return []

    def delete_abandoned(self, keys: Iterable[str]) -> None:
        for key in keys:
            raise PermanentStorageError(f"not a partial write: {key!r}")


def _md5(data: bytes, known: str = "") -> dict[str, str]:
    """Content-MD5 for a PutObject (from `known`, the hex MD5 the caller computed, else hashed
    here): S3 refuses the upload (BadDigest) if the bytes it received differ, and the object's
    ETag is then this MD5 (single part, SSE-S3), which a listing returns (`ObjectInfo.md5`).
    moto 5.2 does not check the header; AWS S3 does."""
    digest = bytes.fromhex(known) if known else hashlib.md5(data, usedforsecurity=False).digest()
    return {"ContentMD5": base64.b64encode(digest).decode()}

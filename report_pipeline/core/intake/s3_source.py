"""An S3 bucket/prefix as a report source: `s3://<bucket>/<prefix>/<YYYY-MM>/<name>.pdf`.

The same interface as the local inbox (`sources.ReportSource`). S3 cannot say cheaply that a
folder is unchanged, so every listing is read on each tick (1,000 keys per request). Bytes are
streamed into a private file with a byte cap; the object's stated length is never trusted.

`client` is a boto3 S3 client, the same kind the S3 store takes (Dagster builds it from
`dagster_aws.s3.S3Resource`). S3 failures are classified by `s3_errors`, as for the store:
throttling, 5xx, timeouts and resets are TransientStorageError (a run's staging step retries
them), the rest PermanentStorageError. Messages name the source, never an object key (a key is
where a team keeps its reports). A missing object is a refusal (`missing`), as for a local file.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from report_pipeline.core.intake.intake import RefusedInput, check_month, copy_capped
from report_pipeline.core.intake.sources import (
    Entry,
    ReportRef,
    eligible,
    is_month,
    registered_name,
)
from report_pipeline.core.scratch.workdir import private_file
from report_pipeline.core.storage.s3_errors import MappedBody, is_missing, mapped


class S3PrefixSource:
    """Reports under one prefix of one bucket; other buckets and prefixes are not this source."""

    page_size = 1000  # keys per listing request (S3's maximum)

    def __init__(self, name: str, bucket: str, prefix: str, client: Any) -> None:
        self.name = name
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        self.client = client
        self.label = f"in report source {name!r}"  # for messages: never the object key

    def _list(self, prefix: str, delimiter: str = "") -> Iterator[dict]:
        params = {"Bucket": self.bucket, "Prefix": prefix}
        if delimiter:
            params["Delimiter"] = delimiter
        paging = {"PageSize": self.page_size}
        with mapped("list", self.label):
            paginator = self.client.get_paginator("list_objects_v2")
            yield from paginator.paginate(**params, PaginationConfig=paging)

    def months(self) -> list[tuple[str, int]]:
        names = [
            common["Prefix"][len(self.prefix) :].rstrip("/")
            for page in self._list(self.prefix, "/")
            for common in page.get("CommonPrefixes", [])
        ]
        return [(name, 0) for name in names if is_month(name)]

    def entries(self, month: str) -> list[Entry]:
        base = f"{self.prefix}{check_month(month)}/"
        found = []
        for page in self._list(base):
            for item in page.get("Contents", []):
                name = item["Key"][len(base) :]
                if "/" in name or not eligible(name):
                    continue
                mtime = int(item["LastModified"].timestamp() * 1e9)
                fingerprint = f"{item.get('ETag', '')}:{item['Size']}:{mtime}"
                ref = ReportRef(self.name, f"{month}/{name}")
                found.append(Entry(ref, item["Size"], mtime, mtime, fingerprint))
        return found

    def authorize(self, reference: str) -> ReportRef | None:
        if not reference.startswith("s3://"):
            return None
        bucket, _, key = reference[len("s3://") :].partition("/")
        if bucket != self.bucket or not key.startswith(self.prefix):
            return None
        rel = key[len(self.prefix) :]
        if ".." in rel.split("/"):
            raise RefusedInput("not_authorized", "reference contains '..' (path traversal)")
        if not rel or "" in rel.split("/"):
            raise RefusedInput("not_regular", "reference is not an object")
        self._head(key)
        return ReportRef(self.name, rel)

    def _key(self, ref: ReportRef) -> str:
        if ref.source != self.name or ".." in ref.rel.split("/"):
            raise RefusedInput("not_authorized", "reference is outside its source")
        return f"{self.prefix}{ref.rel}"

    def changed_ns(self, ref: ReportRef) -> int:
        return int(self._head(self._key(ref))["LastModified"].timestamp() * 1e9)

    def _head(self, key: str) -> dict:
        with mapped("head", self.label):
            try:
                return self.client.head_object(Bucket=self.bucket, Key=key)
            except Exception as exc:
                if is_missing(exc):
                    raise RefusedInput("missing", "no such report in the source") from None
                raise

    @contextmanager
    def opened(self, ref: ReportRef, workdir: Path, max_bytes: int) -> Iterator[Path]:
        with mapped("get", self.label):
            try:
                body = self.client.get_object(Bucket=self.bucket, Key=self._key(ref))["Body"]
            except Exception as exc:
                if is_missing(exc):
                    raise RefusedInput("missing", "no such report in the source") from None
                raise
        yield self._download(body, private_file(workdir, ".pdf"), max_bytes)

    def _download(self, body: Any, dest: Path, max_bytes: int) -> Path:
        with MappedBody(body, "read", self.label) as source, open(dest, "wb") as out:
            copy_capped(source, out, max_bytes)
        return dest

    def register(self, ref: ReportRef, month: str, source_hash: str, size: int) -> ReportRef:
        if ref.month == month and eligible(ref.rel.rsplit("/", 1)[-1]):
            return ref
        target = ReportRef(self.name, f"{check_month(month)}/{registered_name(source_hash)}")
        head = self._head(self._key(ref))
        if head.get("ContentLength") != size:
            raise RefusedInput("changed", "the report changed during intake; submit it again")
        source = {"Bucket": self.bucket, "Key": self._key(ref)}
        with mapped("copy", self.label):
            self.client.copy_object(
                Bucket=self.bucket, Key=self._key(target), CopySource=source,
                CopySourceIfMatch=head.get("ETag", "*"), ServerSideEncryption="AES256",
            )  # fmt: skip
        return target

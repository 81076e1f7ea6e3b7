"""An S3 bucket/prefix as a report source: `s3://<bucket>/<prefix>/<YYYY-MM>/<name>.pdf`.

The same interface as the local inbox (`sources.ReportSource`). S3 cannot say cheaply that a
folder is unchanged, so every listing is read on each tick (1,000 keys per request). Bytes are
streamed into a private file with a byte cap; the object's stated length is never trusted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from report_pipeline.core.intake import RefusedInput, check_month, copy_capped
from report_pipeline.core.sources import Entry, ReportRef, eligible, is_month, registered_name
from report_pipeline.core.workdir import private_file


class S3PrefixSource:
    """Reports under one prefix of one bucket; other buckets and prefixes are not this source."""

    def __init__(
        self, name: str, bucket: str, prefix: str = "", endpoint_url: str = "", client: Any = None
    ) -> None:
        self.name = name
        self.bucket = bucket
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        self._endpoint_url = endpoint_url or None
        self._client = client

    def _s3(self) -> Any:
        if self._client is None:
            import boto3  # only when an S3 source is configured and used

            self._client = boto3.client("s3", endpoint_url=self._endpoint_url)
        return self._client

    def _list(self, prefix: str, delimiter: str = "") -> Iterator[dict]:
        params = {"Bucket": self.bucket, "Prefix": prefix}
        if delimiter:
            params["Delimiter"] = delimiter
        while True:
            page = self._s3().list_objects_v2(**params)
            yield page
            if not page.get("IsTruncated"):
                return
            params["ContinuationToken"] = page["NextContinuationToken"]

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

    def _head(self, key: str) -> dict:
        try:
            return self._s3().head_object(Bucket=self.bucket, Key=key)
        except Exception as exc:  # botocore's ClientError, kept import-free
            if _status(exc) in (403, 404):
                raise RefusedInput("missing", "no such report in the source") from None
            raise

    @contextmanager
    def opened(self, ref: ReportRef, workdir: Path, max_bytes: int) -> Iterator[Path]:
        try:
            body = self._s3().get_object(Bucket=self.bucket, Key=self._key(ref))["Body"]
        except Exception as exc:
            if _status(exc) in (403, 404):
                raise RefusedInput("missing", "no such report in the source") from None
            raise
        yield _download(body, private_file(workdir, ".pdf"), max_bytes)

    def register(self, ref: ReportRef, month: str, source_hash: str, size: int) -> ReportRef:
        if ref.month == month and eligible(ref.rel.rsplit("/", 1)[-1]):
            return ref
        target = ReportRef(self.name, f"{check_month(month)}/{registered_name(source_hash)}")
        head = self._head(self._key(ref))
        if head.get("ContentLength") != size:
            raise RefusedInput("changed", "the report changed during intake; submit it again")
        source = {"Bucket": self.bucket, "Key": self._key(ref)}
        self._s3().copy_object(
            Bucket=self.bucket, Key=self._key(target), CopySource=source,
            CopySourceIfMatch=head.get("ETag", "*"),
        )  # fmt: skip
        return target


def _status(exc: Exception) -> int | None:
    return getattr(exc, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")


def _download(body: Any, dest: Path, max_bytes: int) -> Path:
    with body, open(dest, "wb") as out:
        copy_capped(body, out, max_bytes)
    return dest

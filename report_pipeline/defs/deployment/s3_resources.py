"""The S3 side of the resources, built on `dagster_aws.s3.S3Resource`.

Kept apart from resources.py because importing dagster_aws takes ~0.4 s, which the embedded
default (local store, local inbox) should not pay in every process; resources.py imports this
module only when an S3 store or source is asked for.

Environment (read through `dg.EnvVar` when the resource is used; `production_store_resource()`
only looks at which variables are set, to know which ones to wire):
- `REPORT_PIPELINE_S3_BUCKET` (required), `REPORT_PIPELINE_S3_PREFIX` (optional);
- `REPORT_PIPELINE_INBOX_BUCKET`, `REPORT_PIPELINE_INBOX_PREFIX` (optional): the primary report
  source on S3 instead of the local inbox (same name, `inbox`, so report ids do not change);
- `REPORT_PIPELINE_S3_ENDPOINT`, else `AWS_ENDPOINT_URL` (S3-compatible servers; unset: AWS);
- `AWS_REGION`, else `AWS_DEFAULT_REGION`;
- credentials from boto3's usual chain: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`
  (/`AWS_SESSION_TOKEN`), a profile, or the instance's or task's role. Never in config.
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg
from dagster_aws.s3 import S3Resource
from pydantic import PrivateAttr

from report_pipeline.core.intake.s3_source import S3PrefixSource
from report_pipeline.core.intake.sources import ReportSource
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import Store
from report_pipeline.defs.deployment.resources import (
    InboxResource,
    StoreResource,
    _build,
)
from report_pipeline.defs.deployment.s3_clients import (
    CLIENT_RETRIES,
    S3ClientResource,
    s3_source_client,
)


class S3StoreResource(StoreResource):
    """The private store in an S3 bucket (under `prefix`), same key space as the local store.
    The bucket must block all public access; every object is written SSE-AES256 with no ACL.
    A StoreResource, so ops that take `store: StoreResource` run on it unchanged (`root` is
    not used)."""

    root: str = ""  # not used: the bucket is the store
    bucket: str
    prefix: str = ""
    s3: S3Resource

    _store: Store | None = PrivateAttr(default=None)

    def get_store(self) -> Store:
        if self._store is None:  # one boto3 client per process, not one per call
            self._store = S3Store(self.s3.get_client(), self.bucket, self.prefix)
        return self._store


def _env(*names: str) -> Any:
    """`dg.EnvVar` for the first of `names` that is set, else None (boto3's default)."""
    for name in names:
        if os.environ.get(name):
            return dg.EnvVar(name)
    return None


def s3_resource_from_env(endpoint_url: str = "", retries: int = CLIENT_RETRIES) -> S3Resource:
    """An S3Resource whose endpoint and region come from the environment (see module doc)."""
    endpoint = endpoint_url or _env("REPORT_PIPELINE_S3_ENDPOINT", "AWS_ENDPOINT_URL")
    return S3ClientResource(
        endpoint_url=endpoint,
        region_name=_env("AWS_REGION", "AWS_DEFAULT_REGION"),
        max_attempts=retries,  # botocore's retries.max_attempts: retries, not attempts
    )


def production_store_resource() -> S3StoreResource:
    """The `store` resource of the production deployment: S3, configured from the environment."""
    return S3StoreResource(
        bucket=dg.EnvVar("REPORT_PIPELINE_S3_BUCKET"),
        prefix=_env("REPORT_PIPELINE_S3_PREFIX") or "",
        s3=s3_resource_from_env(),
    )


class S3InboxResource(InboxResource):
    """The primary report source in an S3 bucket/prefix (`<prefix>/<YYYY-MM>/*.pdf`) instead of
    a local folder; same name and interface, so backfills and UI launches (which read the primary
    source) and the sensor see it like the local inbox."""

    root: str = ""  # not used: the bucket/prefix is the primary inbox
    bucket: str
    prefix: str = ""
    endpoint_url: str = ""  # empty: $REPORT_PIPELINE_S3_ENDPOINT, $AWS_ENDPOINT_URL or AWS

    _client: Any = PrivateAttr(default=None)

    def report_sources(self) -> list[ReportSource]:
        if self._client is None:  # one boto3 client per process, not one per sensor tick
            self._client = s3_source_client(self.endpoint_url)
        primary = S3PrefixSource(self.name, self.bucket, self.prefix, self._client)
        return [primary, *(_build(spec) for spec in self.extra_sources)]


def production_inbox_resource(local: InboxResource) -> InboxResource:
    """The `inbox` resource of the production deployment: on S3 when REPORT_PIPELINE_INBOX_BUCKET
    is set where the definitions load (which variables are set decides the resource's type;
    their values are read when it is used), else `local` (the local inbox as wired)."""
    if not os.environ.get("REPORT_PIPELINE_INBOX_BUCKET"):
        return local
    return S3InboxResource(
        bucket=dg.EnvVar("REPORT_PIPELINE_INBOX_BUCKET"),
        prefix=_env("REPORT_PIPELINE_INBOX_PREFIX") or "",
    )

"""boto3 S3 clients for every S3 resource of the project: dagster_aws's S3Resource with lean
requests (no checksum or `100 Continue` round trip a small write does not need) and botocore's
parsed models shared (defs/deployment/library_seams.py). Below both
resources.py (an S3 report source) and s3_resources.py (the production store and inbox)."""

from __future__ import annotations

import os
from typing import Any

from botocore.config import Config
from botocore.handlers import disable_signing
from botocore.utils import determine_content_length
from dagster_aws.s3 import S3Resource
from dagster_aws.utils import construct_boto_client_retry_config

from report_pipeline.core.storage.s3_store import IO_WORKERS
from report_pipeline.defs.deployment import library_seams

# botocore retries throttling, 5xx and connection errors itself (standard mode) before the
# store's TransientStorageError reaches the op's RetryPolicy: keep its own retries few. The
# resources' `max_attempts` is botocore's `retries.max_attempts`, which counts retries: 3 is
# 4 attempts of a call (the SlowDown fault test reads them from the requests' headers).
CLIENT_RETRIES = 3
# Per-request CPU that buys nothing here, on a machine whose cores the decoders already fill: a
# CRC32 checksum of every body (botocore's default since 1.36) beside the Content-MD5 the store
# sends and S3 checks (files, which have none, ask for their CRC32 themselves: S3Store.put_file),
# and botocore's validation of parameters only this package builds.
LEAN = Config(
    request_checksum_calculation="when_required",
    response_checksum_validation="when_required",
    parameter_validation=False,
    max_pool_connections=IO_WORKERS,  # a connection for each of a step's concurrent requests
)


# botocore asks S3 for `100 Continue` before every PutObject body (it turns even bytes into a
# file): one more round trip per write, 30 ms or more on a real bucket. Worth it only where S3
# refuses the request as a matter of course and the body not sent is large: a create-only write
# (If-None-Match) of an object that exists, from this size up. A plain overwrite (the staged
# source, a multipart part) is refused only when the setup is broken (credentials, bucket), and
# then one body sent in vain costs nothing worth a round trip on every upload.
CONTINUE_FROM_BYTES = 1 << 20


def _continue_only_for_large_bodies(request: Any, **_: Any) -> None:
    """At `before-send`, once the request is signed (`Expect` is never signed)."""
    if "Expect" in request.headers:
        length = determine_content_length(request.body)
        small = length is not None and length < CONTINUE_FROM_BYTES
        if small or "If-None-Match" not in request.headers:
            del request.headers["Expect"]


class S3ClientResource(S3Resource):
    """`dagster_aws`'s S3Resource, configured the same way, whose clients cost ~10 ms instead of
    ~0.1-0.3 s each: a production run makes three (store, report source, IO manager), and each
    S3Resource.get_client() started a boto3 session that parsed botocore's service models again.
    Each client still gets a session of its own (credentials, profile and environment are read
    when it is made); only the parsed models are shared (`library_seams.boto3_session`)."""

    def get_client(self) -> Any:
        client = library_seams.boto3_session(self.profile_name).client(
            "s3",
            region_name=self.region_name,
            use_ssl=self.use_ssl,
            verify=self.verify,
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.aws_access_key_id,
            aws_secret_access_key=self.aws_secret_access_key,
            aws_session_token=self.aws_session_token,
            config=construct_boto_client_retry_config(self.max_attempts).merge(LEAN),
        )
        if self.use_unsigned_session:
            client.meta.events.register("choose-signer.s3.*", disable_signing)
        for operation in ("PutObject", "UploadPart"):
            client.meta.events.register(
                f"before-send.s3.{operation}", _continue_only_for_large_bodies
            )
        return client


def s3_source_client(endpoint_url: str = "", region: str = "") -> Any:
    """The boto3 client an S3 report source uses, from an S3Resource like the store's. Called
    while the inbox resource is in use, so it reads the environment directly."""
    endpoint = endpoint_url or os.environ.get("REPORT_PIPELINE_S3_ENDPOINT") or None
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    resource = S3ClientResource(
        endpoint_url=endpoint, region_name=region or None, max_attempts=CLIENT_RETRIES
    )  # AWS_ENDPOINT_URL, when set and no endpoint is given here, is read by boto3 itself
    return resource.get_client()

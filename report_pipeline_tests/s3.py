"""A real S3 API server for the tests: moto's server mode on a free loopback port.

One server per test session (`s3_server`); each test gets a fresh bucket and dummy credentials in
its environment only (`s3` fixture in conftest.py). Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from devstack import local_s3

CREDENTIALS = {**local_s3.CREDENTIALS, "AWS_SESSION_TOKEN": "testing"}


def client(endpoint: str, attempts: int = 3, timeout: float = 10) -> Any:
    """A boto3 S3 client for `endpoint` with the dummy credentials; `attempts=1` surfaces every
    error (botocore retries throttling, 5xx and connection errors itself otherwise)."""
    config = Config(
        retries={"total_max_attempts": attempts, "mode": "standard"},
        connect_timeout=timeout,
        read_timeout=timeout,
    )
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


def start_server(slowdown: local_s3.SlowDown | None = None) -> tuple[Any, str]:
    """Start the S3 server `make demo-production` and the bench use (moto's S3 service,
    devstack/local_s3.py) in a thread, on a port the OS picks; returns (server, endpoint
    URL). `server.shutdown()` stops it. With `slowdown`, it answers 503 SlowDown while that
    outage lasts; it serves the same buckets as any other server in this process."""
    server = local_s3.make_server(0, slowdown)
    threading.Thread(target=server.serve_forever, name="s3-server", daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


@dataclass
class S3:
    """One test's bucket on the session's server."""

    endpoint: str
    bucket: str
    client: Any

    def new_bucket(self) -> str:
        name = f"t-{uuid.uuid4().hex[:20]}"
        self.client.create_bucket(Bucket=name)
        return name


def fresh(endpoint: str) -> S3:
    s3 = S3(endpoint, "", client(endpoint))
    s3.bucket = s3.new_bucket()
    return s3


class Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_kwargs):
        yield self.body


def answer(status: int, code: str):
    """A `before-send` handler: S3 answers every request with this error, nothing is sent."""
    body = f"<Error><Code>{code}</Code><Message>injected</Message></Error>".encode()

    def handler(request, **_kwargs):
        return AWSResponse(request.url, status, {"Content-Type": "application/xml"}, Raw(body))

    return handler


class ResetBody:
    """A download whose connection drops after the first piece."""

    def __init__(self, body) -> None:
        self.body, self.reads = body, 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads > 1:
            raise ConnectionResetError("connection reset by peer")
        return self.body.read(1024)

    def close(self) -> None:
        self.body.close()

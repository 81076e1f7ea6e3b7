"""An S3 API server for one machine (`make demo-production`, `make dev-production`, the bench):
moto's server (`moto_server`, in the dev dependency group) on a free loopback port, in its own
process, stopped at the end with everything it held. Not Dagster, not core: plain Python.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3

from report_pipeline.loopback import free_port, wait_accepting

# Dummy credentials: moto accepts any; set in the environment of whatever talks to it.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextmanager
def moto_server(timeout: float = 30.0) -> Iterator[str]:
    """`moto_server` on a free loopback port: its endpoint URL while the block runs."""
    exe = Path(sys.executable).parent / "moto_server"
    if not exe.exists():
        raise RuntimeError("moto_server not found: `uv sync` installs it (dev group, moto[server])")
    port = free_port()
    process = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        if not wait_accepting(port, process, timeout):
            raise RuntimeError(f"moto_server did not start on 127.0.0.1:{port}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(endpoint: str) -> Any:
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", **keys)


def private_bucket(s3: Any, name: str) -> str:
    """Create `name` as the deployment needs it: default encryption (SSE-S3, which also covers
    objects Dagster writes without asking, e.g. op outputs) and all public access blocked."""
    s3.create_bucket(Bucket=name)
    rule = {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": [rule]})
    block = dict.fromkeys(
        ["BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"], True
    )
    s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=block)
    return name

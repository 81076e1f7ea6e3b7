"""An S3 API server for one machine (`make demo-production`, `make dev-production`, the bench):
moto's S3 service (moto[server], in the dev dependency group) on a free loopback port, in its own
process (`python -m devstack.local_s3 --port N`), stopped at the end with everything it
held. Not Dagster, not core: plain Python.

It serves moto's S3 application alone, through the same werkzeug server and request handler as
`moto_server`, without moto's multi-service dispatcher. The dispatcher works out which of ~150
services each request is for: it lists moto's package folder (a stat per entry) and tries the
services' URL patterns, every request. That, moto's access log and its browser CORS layer took
a third of the server's CPU per PutObject (3.70 -> 2.50 ms, `python -m bench.experiments.s3_server`;
bench/HISTORY.md, "Equal work, and a leaner S3 test server"), on the two cores the run under test
decodes on. The tests' in-thread server (`make_server`) is the same application.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3

from devstack.loopback import free_port, wait_accepting

# Dummy credentials: moto accepts any; set in the environment of whatever talks to it.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def make_server(port: int = 0) -> Any:
    """moto's S3 application in werkzeug's threaded server on 127.0.0.1:`port` (0: the OS picks;
    the port is `.server_port`), not yet serving: `serve_forever()` in a thread or process."""
    os.environ.setdefault("MOTO_DISABLE_GLOBAL_CORS", "1")  # read when moto.settings is imported
    from moto.server import MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server as werkzeug_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access-log line per request
    app = create_backend_app("s3")
    return werkzeug_server(
        "127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler
    )


def command(port: int) -> list[str]:
    """The command that serves moto's S3 application on `port` in a process of its own."""
    return [sys.executable, "-m", "devstack.local_s3", "--port", str(port)]


@contextmanager
def moto_server(timeout: float = 30.0) -> Iterator[str]:
    """The S3 server in its own process on a free loopback port: its endpoint URL while the
    block runs."""
    try:
        import moto  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "moto is not installed: `uv sync` installs it (dev group, moto[server])"
        ) from None
    with server_process(command, timeout) as (endpoint, _pid):
        yield endpoint


@contextmanager
def server_process(
    argv: Callable[[int], list[str]], timeout: float = 30.0
) -> Iterator[tuple[str, int]]:
    """An S3 API server started by `argv(port)` on a free loopback port: (its endpoint URL, its
    pid) while the block runs; stopped at the end."""
    port = free_port()
    process = subprocess.Popen(
        argv(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        cwd=Path(__file__).resolve().parents[1],  # where `-m devstack.local_s3` is found
    )  # fmt: skip
    try:
        if not wait_accepting(port, process, timeout):
            raise RuntimeError(f"the S3 server did not start on 127.0.0.1:{port}")
        yield f"http://127.0.0.1:{port}", process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def client(endpoint: str, config: Any = None) -> Any:
    keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=config, **keys)


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m devstack.local_s3")
    parser.add_argument("--port", type=int, required=True)
    make_server(parser.parse_args(argv).port).serve_forever()


if __name__ == "__main__":
    main()

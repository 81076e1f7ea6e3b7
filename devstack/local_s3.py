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
decodes on. The tests' in-thread server (`make_server`) is the same application; with a
`SlowDown` it also answers 503 SlowDown for a while, as S3 throttling a prefix does (issue 33,
case 5: report_pipeline_tests/faults/test_fault_s3_slowdown.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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


def make_server(port: int = 0, slowdown: SlowDown | None = None) -> Any:
    """moto's S3 application in werkzeug's threaded server on 127.0.0.1:`port` (0: the OS picks;
    the port is `.server_port`), not yet serving: `serve_forever()` in a thread or process.
    With `slowdown`, the server answers 503 SlowDown while its outage lasts. Two servers in one
    process serve the same buckets (moto's state is the process's), so a throttled server beside
    the tests' own is S3 throttling every client sent to it, and only those."""
    os.environ.setdefault("MOTO_DISABLE_GLOBAL_CORS", "1")  # read when moto.settings is imported
    from moto.server import MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server as werkzeug_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access-log line per request
    app = create_backend_app("s3")
    return werkzeug_server(
        "127.0.0.1", port, slowdown.wrap(app) if slowdown else app, threaded=True,
        request_handler=MotoRequestHandler,
    )  # fmt: skip


SLOWDOWN_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    "<Message>Please reduce your request rate.</Message><RequestId>{id}</RequestId></Error>"
)


@dataclass(frozen=True)
class Request:
    """One request the server answered: when (monotonic and wall clock), what, and how."""

    at: float
    wall: float
    method: str
    path: str
    status: int
    # botocore's `amz-sdk-request` header: this attempt of the call (1: the first) and the
    # most attempts its client makes; its `amz-sdk-invocation-id` is the same on every attempt
    attempt: int
    max_attempts: int
    invocation: str


@dataclass
class SlowDown:
    """An S3 outage as S3 throttles a prefix: every request answered `503 Slow Down` (the body
    S3 sends, with a request id) for `seconds` from the first request `starts(method, path)`
    accepts, then served again. The request's body is read before the answer, as S3 does, so a
    kept-alive connection stays usable and the client's own retry logic (botocore: backoff
    with jitter, `amz-sdk-request` attempt numbers) meets a real HTTP 503. `requests` logs every
    request the server answered, throttled or not, from the first one on."""

    seconds: float
    starts: Callable[[str, str], bool]
    began: float | None = None  # monotonic, when the outage began
    began_wall: float | None = None
    requests: list[Request] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def ends(self) -> float | None:
        return None if self.began is None else self.began + self.seconds

    def throttled(self) -> list[Request]:
        return [r for r in self.requests if r.status == 503]

    def wrap(self, app: Callable) -> Callable:
        from werkzeug.wsgi import get_input_stream

        def throttling(environ: dict, start_response: Callable) -> Iterable[bytes]:
            method, path, now = (
                environ["REQUEST_METHOD"],
                environ.get("PATH_INFO", ""),
                time.monotonic(),
            )
            with self._lock:
                if self.began is None and self.starts(method, path):
                    self.began, self.began_wall = now, time.time()
                down = self.began is not None and now < self.began + self.seconds
            attempt, most, invocation = _sdk_attempt(environ)

            def log(status: int) -> None:
                line = Request(now, time.time(), method, path, status, attempt, most, invocation)
                with self._lock:
                    self.requests.append(line)

            if not down:

                def logged(status: str, headers: list, *rest: Any) -> Any:
                    log(int(status.split(" ", 1)[0]))
                    return start_response(status, headers, *rest)

                return app(environ, logged)
            get_input_stream(environ).read()  # the whole request, then the answer
            request_id = secrets.token_hex(8).upper()
            body = b"" if method == "HEAD" else SLOWDOWN_BODY.format(id=request_id).encode()
            log(503)
            start_response("503 Slow Down", [
                ("Content-Type", "application/xml"), ("Content-Length", str(len(body))),
                ("x-amz-request-id", request_id),
            ])  # fmt: skip
            return [body]

        return throttling


def _sdk_attempt(environ: dict) -> tuple[int, int, str]:
    """(attempt, max attempts, invocation id) from botocore's headers; (0, 0, "") without."""
    fields = dict(
        part.strip().split("=", 1)
        for part in environ.get("HTTP_AMZ_SDK_REQUEST", "").split(";")
        if "=" in part
    )
    invocation = environ.get("HTTP_AMZ_SDK_INVOCATION_ID", "")
    return int(fields.get("attempt", 0)), int(fields.get("max", 0)), invocation


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

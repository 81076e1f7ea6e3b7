"""`python -m bench.experiments.s3_server`: what the local S3 server costs per PutObject,
served as `local_s3.moto_server()` serves it (moto's S3 application alone) against moto's own
`moto_server` command (every service behind its dispatcher).

Both servers run at once, each in its own process; every round puts the same 300 objects (60 KB,
SSE-S3, Content-MD5 and If-None-Match as the store sends them, 8 threads) into each, in
alternating order. Printed per server: the server's CPU per request (from /proc), this client's
CPU per request and the wall of the 300 puts. Medians of `--rounds` after one untimed round.
Linux only (/proc).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from statistics import median

from bench.common import own_cpu, proc_cpu
from devstack import local_s3
from report_pipeline.defs.deployment.s3_clients import LEAN

PUTS = 300
BODY = os.urandom(60_000)
MD5 = base64.b64encode(hashlib.md5(BODY).digest()).decode()


def moto_cli(port: int) -> list[str]:
    """moto's own `moto_server` command on `port`."""
    return [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)]


def puts(s3, bucket: str, tag: str) -> None:
    def put(i: int) -> None:
        s3.put_object(Bucket=bucket, Key=f"archive/{tag}/{i:05d}.png", Body=BODY, ContentMD5=MD5,
                      ServerSideEncryption="AES256", IfNoneMatch="*")  # fmt: skip

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(PUTS)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.experiments.s3_server", description=__doc__
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        servers = {
            "local_s3 (S3 app only)": stack.enter_context(
                local_s3.server_process(local_s3.command)
            ),
            "moto_server command": stack.enter_context(local_s3.server_process(moto_cli)),
        }
        clients = {}
        for name, (url, _) in servers.items():
            s3 = local_s3.client(url, LEAN)  # as the deployment's clients are configured
            clients[name] = local_s3.private_bucket(s3, "bench-s3-server"), s3
        rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name in servers}
        for i in range(args.rounds + 1):
            for name in list(servers) if i % 2 == 0 else list(servers)[::-1]:
                (bucket, s3), pid = clients[name], servers[name][1]
                server, client, start = proc_cpu(pid), own_cpu(), time.perf_counter()
                puts(s3, bucket, f"r{i}")
                wall = time.perf_counter() - start
                if i:  # round 0: untimed
                    per = (proc_cpu(pid) - server, own_cpu() - client)
                    rows[name].append((per[0] / PUTS * 1e3, per[1] / PUTS * 1e3, wall))
    print(f"{PUTS} PutObject of {len(BODY) // 1000} KB, 8 threads (medians of {args.rounds})")
    for name, values in rows.items():
        server, client, wall = (median(v[k] for v in values) for k in range(3))
        print(f"  {name:<24} server {server:.2f} ms/request  client {client:.2f} ms/request  "
              f"wall {wall:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

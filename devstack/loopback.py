"""Loopback ports for the throwaway servers started on one machine (moto, PostgreSQL, PgBouncer,
Redis, the tests' webservers): a free port, and whether something accepts connections on one."""

from __future__ import annotations

import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_accepting(port: int, process: subprocess.Popen, timeout: float) -> bool:
    """Whether `process` (a server just started on `port`) accepts connections within `timeout`
    seconds; False as soon as it exits."""
    deadline = time.monotonic() + timeout
    while not accepting(port):
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def accepting(port: int) -> bool:
    """Whether a TCP connection to 127.0.0.1:`port` succeeds now."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False

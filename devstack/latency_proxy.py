"""A loopback TCP proxy that adds a fixed delay to every round trip, in front of a local server
(moto's S3), to measure what a real bucket's latency does to a run.

An S3 client speaks HTTP/1.1 without pipelining: it sends a request, then waits for the answer.
So each time a connection's client starts talking after the server did (or first), a round trip
begins, and the proxy holds those bytes `delay` seconds before passing them on. That is the cost
a real bucket adds per request (and per `Expect: 100-continue`, which waits a round trip too).
The proxy logs every round trip: when it began and when its answer last moved, so a benchmark
can count how many ran one after another (`waves`). It only delays; it never changes a byte.

`latency_proxy()` runs it in a process of its own, as moto's server runs: its threads copy every
byte of every request, and inside the measured process they would take turns with the run's
threads for the interpreter lock, a cost a real network never puts on the client.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]  # the checkout: `-m devstack...` runs from it


@dataclass
class Trip:
    started: float
    ended: float
    first_line: str  # "PUT /bucket/key HTTP/1.1" when the trip's bytes begin a request


@dataclass
class _Connection:
    client_turn: bool = True  # the client talks next: its next bytes begin a round trip
    trip: Trip | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class LatencyProxy:
    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port, self.delay = target_port, delay
        self.trips: list[Trip] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LatencyProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()

    def take_trips(self) -> list[Trip]:
        """The round trips logged since the last call, and a fresh log."""
        with self._lock:
            trips, self.trips = self.trips, []
        return trips

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            state = _Connection()
            threading.Thread(target=self._upstream, args=(client, server, state),
                             daemon=True).start()  # fmt: skip
            threading.Thread(target=self._downstream, args=(server, client, state),
                             daemon=True).start()  # fmt: skip

    def _upstream(self, client: socket.socket, server: socket.socket, state: _Connection) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(1 << 16):
                with state.lock:
                    begins, state.client_turn = state.client_turn, False
                if begins:  # the trip, as the client waits for it, starts with the delay
                    started = time.monotonic()
                    time.sleep(self.delay)
                    line = data.split(b"\r\n", 1)[0][:200].decode("latin-1")
                    trip = Trip(started, time.monotonic(), line)
                    with state.lock:
                        state.trip = trip
                    with self._lock:
                        self.trips.append(trip)
                server.sendall(data)
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_WR)

    def _downstream(self, server: socket.socket, client: socket.socket, state: _Connection) -> None:
        with contextlib.suppress(OSError):
            while data := server.recv(1 << 16):
                with state.lock:  # before the client can see the answer and send again
                    state.client_turn = True
                    # the trip's end, also before: the client's next request may start its
                    # trip (on another connection too) while this thread waits for a core
                    # after sendall, and would count as overlapping it (one wave, not two)
                    if state.trip is not None:
                        state.trip.ended = time.monotonic()
                client.sendall(data)
        for sock in (client, server):
            with contextlib.suppress(OSError):
                sock.close()


def waves(trips: list[Trip]) -> int:
    """How many round trips ran one after another: the trips, ordered by start, that began when
    no earlier trip was still in flight. A run's added latency is about waves x delay."""
    count, busy_until = 0, float("-inf")
    for trip in sorted(trips, key=lambda t: t.started):
        if trip.started >= busy_until:
            count += 1
        busy_until = max(busy_until, trip.ended)
    return count


class ProxyProcess:
    """A `LatencyProxy` in a child process (`python -m devstack.latency_proxy PORT DELAY`),
    driven over its stdin and stdout: the same `endpoint` and `take_trips` (time.monotonic is
    the machine's clock, the same in both processes)."""

    def __init__(self, target_port: int, delay: float) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "devstack.latency_proxy", str(target_port), repr(delay)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=_ROOT,
        )  # fmt: skip
        line = self._process.stdout.readline() if self._process.stdout else ""
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"the latency proxy did not start: {line.strip()!r}")
        self.port = int(line)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def take_trips(self) -> list[Trip]:
        assert self._process.stdin and self._process.stdout
        self._process.stdin.write("take\n")
        self._process.stdin.flush()
        return [Trip(*fields) for fields in json.loads(self._process.stdout.readline())]

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            if self._process.stdin:
                self._process.stdin.close()  # end of input: the child stops
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout:
            self._process.stdout.close()


def main(argv: list[str]) -> None:
    """The child's side: the proxy's port on stdout, then one JSON line of trips per `take`."""
    proxy = LatencyProxy(int(argv[0]), float(argv[1])).start()
    print(proxy.port, flush=True)
    for command in sys.stdin:
        if command.strip() == "take":
            trips = [(t.started, t.ended, t.first_line) for t in proxy.take_trips()]
            print(json.dumps(trips), flush=True)
    proxy.stop()


@contextlib.contextmanager
def latency_proxy(target_port: int, delay: float) -> Iterator[ProxyProcess]:
    proxy = ProxyProcess(target_port, delay)
    try:
        yield proxy
    finally:
        proxy.stop()


if __name__ == "__main__":
    main(sys.argv[1:])

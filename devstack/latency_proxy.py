"""A loopback TCP proxy that adds a fixed delay to every round trip, in front of a local server
(moto's S3), to measure what a real bucket's latency does to a run.

An S3 client speaks HTTP/1.1 without pipelining: it sends a request, then waits for the answer.
So each time a connection's client starts talking after the server did (or first), a round trip
begins, and the proxy holds those bytes `delay` seconds before passing them on. That is the cost
a real bucket adds per request (and per `Expect: 100-continue`, which waits a round trip too).
The proxy logs every round trip: when it began and when its answer last moved, so a benchmark
can count how many ran one after another (`waves`). It only delays; it never changes a byte.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field


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
                if begins:
                    time.sleep(self.delay)
                    line = data.split(b"\r\n", 1)[0][:200].decode("latin-1")
                    trip = Trip(time.monotonic(), time.monotonic(), line)
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
                client.sendall(data)
                with state.lock:
                    if state.trip is not None:
                        state.trip.ended = time.monotonic()
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


@contextlib.contextmanager
def latency_proxy(target_port: int, delay: float) -> Iterator[LatencyProxy]:
    proxy = LatencyProxy(target_port, delay).start()
    try:
        yield proxy
    finally:
        proxy.stop()

"""What a write costs in round trips to a real bucket, counted by the latency proxy the S3
benchmark uses (devstack/latency_proxy.py, bench/s3_latency.py): a small write is one round
trip; only a large create-only body first waits for S3's `100 Continue`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from devstack import latency_proxy
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.defs.deployment.s3_clients import CONTINUE_FROM_BYTES, S3ClientResource

pytestmark = pytest.mark.slow


@pytest.fixture
def proxied(s3):
    with latency_proxy.latency_proxy(urlsplit(s3.endpoint).port, 0.005) as proxy:
        client = S3ClientResource(endpoint_url=proxy.endpoint).get_client()
        yield proxy, S3Store(client, s3.bucket, "")


def put(store: S3Store, key: str, size: int) -> bool:
    data = os.urandom(size)
    return store.put_if_absent(key, data, hashlib.md5(data).hexdigest())


def test_a_small_write_is_one_round_trip_a_large_one_waits_for_continue(proxied):
    proxy, store = proxied
    proxy.take_trips()
    assert put(store, "archive/small.png", 50_000)
    assert len(proxy.take_trips()) == 1
    assert put(store, "archive/large.png", CONTINUE_FROM_BYTES + 1)
    # the headers, then the body after `100 Continue` (moto's server answers it twice, so a
    # body sent in pieces may count one more)
    assert len(proxy.take_trips()) >= 2
    assert not put(store, "archive/small.png", 10)  # create-only: refused, still one trip
    assert len(proxy.take_trips()) == 1


def test_the_proxy_counts_concurrent_trips_as_one_wave(proxied):
    proxy, store = proxied
    from report_pipeline.core.storage.parallel_io import BackgroundPuts

    proxy.take_trips()
    with BackgroundPuts(store) as uploads:
        for n in range(8):
            data = os.urandom(1000)
            uploads.put_if_absent(f"archive/{n}.png", data, hashlib.md5(data).hexdigest())
    trips = proxy.take_trips()
    assert len(trips) == 8 and latency_proxy.waves(trips) < 8
    for n in range(3):
        put(store, f"archive/one-by-one-{n}.png", 1000)
    assert latency_proxy.waves(proxy.take_trips()) == 3


def test_a_large_plain_upload_does_not_wait_for_continue(proxied, tmp_path: Path):
    """The staged source (put_file) overwrites: S3 refuses it only when the setup is broken."""
    proxy, store = proxied
    path = tmp_path / "staged.pdf"
    path.write_bytes(os.urandom(3 * CONTINUE_FROM_BYTES))
    proxy.take_trips()
    store.put_file("staged/r/rev.pdf", path)
    assert len(proxy.take_trips()) == 1
    assert store.get_bytes("staged/r/rev.pdf", 4 * CONTINUE_FROM_BYTES) == path.read_bytes()

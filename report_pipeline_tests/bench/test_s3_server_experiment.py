"""The S3 server experiment's plumbing (bench/experiments/s3_server.py), so it does not rot:
both servers start (the local S3 server and moto's own `moto_server` command), take the same
puts, and are measured."""

import re

import pytest

from bench.experiments import s3_server

pytestmark = pytest.mark.live


def test_both_servers_take_the_puts_and_are_measured(monkeypatch, capsys):
    monkeypatch.setattr(s3_server, "PUTS", 60)  # ~0.15 s of server CPU: several /proc ticks
    assert s3_server.main(["--rounds", "1"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"(local_s3 \(S3 app only\)|moto_server command)\s+server ([\d.]+) ms", out)
    assert [name for name, _ in rows] == ["local_s3 (S3 app only)", "moto_server command"]
    assert all(float(ms) > 0 for _, ms in rows)

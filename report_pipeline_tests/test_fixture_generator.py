"""The committed fixtures are exactly what the deterministic generator produces."""

import hashlib
import subprocess
import sys

import pytest

from fixtures import _cases
from report_pipeline_tests.conftest import FIXTURES

pytestmark = pytest.mark.slow


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_generator_reproduces_the_committed_fixtures(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "fixtures.generate", "--out", str(tmp_path), "--verify"],
        cwd=FIXTURES.parent.parent, check=True, capture_output=True,
    )  # fmt: skip
    committed = {p.name: digest(p) for p in FIXTURES.glob("*.pdf")}
    generated = {p.name: digest(p) for p in tmp_path.glob("*.pdf")}
    assert sorted(committed) == sorted(_cases.BUILDERS)
    assert generated == committed

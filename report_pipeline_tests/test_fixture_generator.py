"""The committed fixtures are exactly what the deterministic generator produces."""

import hashlib
import subprocess
import sys

from fixtures._cases import BUILDERS
from report_pipeline_tests.conftest import FIXTURES


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_generator_reproduces_the_committed_fixtures(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "fixtures.generate", "--out", str(tmp_path), "--verify"],
        cwd=FIXTURES.parent.parent, check=True, capture_output=True,
    )  # fmt: skip
    committed = {p.name: digest(p) for p in FIXTURES.glob("*.pdf")}
    generated = {p.name: digest(p) for p in tmp_path.glob("*.pdf")}
    assert set(committed) == set(BUILDERS)
    assert generated == committed

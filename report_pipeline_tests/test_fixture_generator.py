"""The committed fixtures are exactly what the deterministic generator produces, and each still
has the properties its verifier asserts. One test per fixture, built in this process (as
`python -m fixtures.generate --verify` builds them), so the tier spreads them over its workers."""

import hashlib
from collections.abc import Iterator

import pymupdf
import pytest

from fixtures import _cases, _verify, generate
from report_pipeline_tests.conftest import FIXTURES

pytestmark = pytest.mark.slow


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def quiet_mupdf(tmp_path) -> Iterator[None]:
    """MuPDF's messages off while a fixture is built and verified, as the generator runs; what
    it said is forgotten after, so no later test in this worker reads it."""
    errors, warnings = pymupdf.TOOLS.mupdf_display_errors(), pymupdf.TOOLS.mupdf_display_warnings()
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    try:
        yield
    finally:
        pymupdf.TOOLS.mupdf_warnings(reset=True)
        pymupdf.TOOLS.mupdf_display_errors(errors)
        pymupdf.TOOLS.mupdf_display_warnings(warnings)


def test_every_builder_has_its_committed_fixture():
    assert sorted(p.name for p in FIXTURES.glob("*.pdf")) == sorted(_cases.BUILDERS)
    assert set(_verify.VERIFIERS) <= set(_cases.BUILDERS)


@pytest.mark.parametrize("name", sorted(_cases.BUILDERS))
def test_the_generator_reproduces_the_committed_fixture_and_its_properties(
    name, tmp_path, quiet_mupdf
):
    data, _ = generate.build(name, tmp_path, force_encrypted=False)
    assert digest(data) == digest((FIXTURES / name).read_bytes())
    if name in _verify.VERIFIERS:  # the same bytes: verifying one verifies the other
        assert _verify.verify_file(FIXTURES / name) == []

"""The versions and reasons the docs name are the code's: a manifest schema or extractor version
or a list of quarantine reasons written in prose goes stale the day the code moves on, so every
one is checked here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from report_pipeline.core.model import store_json
from report_pipeline.core.model.outcome import QUARANTINE_REASONS
from report_pipeline.core.model.records import READABLE_SCHEMAS, SCHEMA_VERSION
from report_pipeline.core.model.settings import EXTRACTOR_VERSION
from report_pipeline.core.validate.quarantine import Quarantined

REPO = Path(__file__).resolve().parents[2]
TEXTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "fixtures" / "README.md"]
SCHEMA = re.compile(r"schema_version: (\d+)|written as schema (\d+)|schemas 1 to (\d+) still read")
EXTRACTOR = re.compile(r"(?:EXTRACTOR_VERSION|extractor version)\W{1,4}(\d+)\b")


def named(pattern: re.Pattern, text: str) -> list[str]:
    return [next(group for group in match.groups() if group) for match in pattern.finditer(text)]


def test_every_schema_version_the_docs_name_is_the_codes():
    texts = {path.name: path.read_text() for path in TEXTS}
    texts["store_json.py"] = store_json.__doc__ or ""
    found = {name: named(SCHEMA, text) for name, text in texts.items()}
    assert any(found.values()), "the docs name no schema version: the pattern needs updating"
    allowed = {str(SCHEMA_VERSION), str(max(READABLE_SCHEMAS) - 1)}  # written; the last older one
    assert {name: v for name, v in found.items() if set(v) - allowed} == {}


def test_every_extractor_version_the_docs_name_is_the_codes():
    stale = {path.name: named(EXTRACTOR, path.read_text()) for path in TEXTS}
    assert {name: v for name, v in stale.items() if set(v) - {EXTRACTOR_VERSION}} == {}


def test_the_quarantine_reasons_the_docs_list_are_the_codes():
    text = (REPO / "docs" / "operate.md").read_text()
    listed = text.split("**Quarantine reasons:**", 1)[1].split(". ", 1)[0]
    assert tuple(re.findall(r"`([a-z_]+)`", listed)) == QUARANTINE_REASONS


def test_a_reason_outside_the_list_is_refused_where_it_is_made():
    with pytest.raises(ValueError, match="not a quarantine reason"):
        Quarantined("made_up", "a typo in a check")


PATH_IN_PROSE = re.compile(r"(?<![\w/.])((?:report_pipeline/)?(?:core|defs)/[a-z0-9_/]+\.py)\b")


def test_every_module_the_docs_name_exists():
    """A module moved or renamed leaves no stale path behind in the docs or docstrings."""
    texts = {path.relative_to(REPO): path.read_text() for path in TEXTS}
    texts |= {p.relative_to(REPO): p.read_text() for p in (REPO / "report_pipeline").rglob("*.py")}
    missing = {
        (str(name), found)
        for name, text in texts.items()
        for found in PATH_IN_PROSE.findall(text)
        if not any(
            (REPO / root / found.removeprefix("report_pipeline/")).exists()
            for root in ("report_pipeline", "report_pipeline_tests")
        )  # fmt: skip
    }
    assert missing == set()


def test_the_developers_guide_describes_every_core_folder():
    guide = (REPO / "docs" / "develop.md").read_text()
    core = REPO / "report_pipeline" / "core"
    folders = {p.name for p in core.iterdir() if (p / "__init__.py").exists()}
    described = set(re.findall(r"^- \*\*([a-z_]+)/\*\*", guide, re.MULTILINE))
    assert described == folders

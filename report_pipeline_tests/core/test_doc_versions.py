"""The versions the docs name are the code's: a manifest schema or extractor version written in
prose goes stale the day the code moves on, so every one is checked here."""

from __future__ import annotations

import re
from pathlib import Path

from report_pipeline.core.model import store_json
from report_pipeline.core.model.records import READABLE_SCHEMAS, SCHEMA_VERSION
from report_pipeline.core.model.settings import EXTRACTOR_VERSION

REPO = Path(__file__).resolve().parents[2]
TEXTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
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

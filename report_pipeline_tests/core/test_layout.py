"""The folders of `core/` import each other in one direction only: shared things (model/,
storage/, scratch/) sit below the steps, and no folder imports one that imports it back."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "report_pipeline" / "core"
PREFIX = "report_pipeline.core."


def _room(module: str) -> str:
    """The folder (or top-level module) of core/ a dotted module name lives in."""
    return module.removeprefix(PREFIX).split(".")[0]


def folder_imports() -> dict[str, set[str]]:
    """core/ folder -> the other core/ folders its modules import (at any depth in a module)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in CORE.rglob("*.py"):
        source = _room(PREFIX + ".".join(path.relative_to(CORE).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith(PREFIX) and _room(name) != source:
                    edges[source].add(_room(name))
    return edges


def loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every folder that can reach itself again, with the path that does."""
    found = []
    for start in sorted(edges):
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    found.append([*path, start])
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    return found


def test_no_folder_of_core_imports_one_that_imports_it_back():
    assert loops(folder_imports()) == []


def test_the_shared_folders_import_no_step():
    """model/ (the key space, records, messages, settings, clock) and storage/ are the ground."""
    edges = folder_imports()
    assert edges["storage"] == set()
    assert edges["model"] <= {"storage"}
    assert edges["scratch"] <= {"model", "storage"}


def test_the_loop_finder_finds_a_loop():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}})[0] == ["a", "b", "c", "a"]
    assert loops({"a": {"b"}, "b": set()}) == []

"""The folders of `core/` import each other in one direction only: shared things (model/,
storage/, scratch/) sit below the steps, and no folder imports one that imports it back. The same
holds for `defs/` (reports/, retention/, deployment/)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "report_pipeline"
CORE = PACKAGE / "core"


def folder_imports(root: Path | None = None) -> dict[str, set[str]]:
    """Folder of `root` (core/ by default) -> the other folders of it that its modules import
    (at any depth in a module)."""
    root = root or CORE
    prefix = "report_pipeline." + ".".join(root.relative_to(PACKAGE).parts) + "."

    def _room(module: str) -> str:
        return module.removeprefix(prefix).split(".")[0]

    edges: dict[str, set[str]] = defaultdict(set)
    for path in root.rglob("*.py"):
        source = _room(prefix + ".".join(path.relative_to(root).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith(prefix) and _room(name) != source:
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


def test_no_folder_of_defs_imports_one_that_imports_it_back():
    edges = folder_imports(PACKAGE / "defs")
    assert loops(edges) == []
    assert edges["deployment"] == set()  # reports/ and retention/ build on it, never it on them


def test_the_shared_folders_import_no_step():
    """model/ (the key space, records, messages, settings, clock) and storage/ are the ground."""
    edges = folder_imports()
    assert edges["storage"] == set()
    assert edges["model"] <= {"storage"}
    assert edges["scratch"] <= {"model", "storage"}


def test_the_loop_finder_finds_a_loop():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}})[0] == ["a", "b", "c", "a"]
    assert loops({"a": {"b"}, "b": set()}) == []

"""The built wheel ships the product only: no tests, fixtures, benchmarks, throwaway servers or
fault injection, and no module of it imports a dev dependency."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
NOT_SHIPPED = ("report_pipeline_tests/", "devstack/", "bench/", "fixtures/")
DEV_ONLY = {"moto", "playwright", "pytest", "ruff"}  # pyproject.toml's dev group


def build_wheel(out: Path) -> Path:
    uv = shutil.which("uv")
    command = [uv] if uv else [sys.executable, "-m", "uv"]
    done = subprocess.run([*command, "build", "--wheel", "--out-dir", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = out.glob("report_pipeline-*.whl")
    return wheel


def test_the_wheel_holds_the_product_and_imports_no_dev_dependency(tmp_path):
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        modules = {n: archive.read(n).decode() for n in names if n.endswith(".py")}
    assert {"report_pipeline/definitions.py", "report_pipeline/core/model/keys.py"} <= set(names)
    assert [n for n in names if n.startswith(NOT_SHIPPED)] == []
    servers = [f"report_pipeline/{p.name}" for p in (REPO / "devstack").glob("[!_]*.py")]
    assert set(names) & set(servers) == set()
    # the storage fault layer is test support (devstack/faults.py): nothing shipped can switch it on
    faulty = [n for n, text in modules.items() if "STORAGE_FAULTS" in text or "Faulty" in text]
    assert faulty == []
    imported = {
        (name, (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0])
        for name, source in modules.items()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom) and getattr(node, "level", 0) == 0
        for alias in (node.names if isinstance(node, ast.Import) else [None])
        if isinstance(node, ast.Import) or node.module
    }
    assert sorted((name, top) for name, top in imported if top in DEV_ONLY | {"devstack"}) == []

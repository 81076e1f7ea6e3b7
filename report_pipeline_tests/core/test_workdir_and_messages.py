import ast
import dataclasses
import json
import pickle
import stat
from pathlib import Path

import pytest

from report_pipeline.core.model import messages
from report_pipeline.core.scratch.workdir import LEASE_FILE, Lease, private_workdir

REF = messages.RevisionRef("inbox-2026-10", "2026-10", "f" * 64, "1", "0123456789abcdef0123")
TASK = messages.PageTask(REF, "pages_0001_2000", 1, 2000, 9000, "2026-10-01T00:00:00.000Z")
EXTRACTED = messages.ExtractedTask(TASK, "work/x/outcomes.json", 8000, 1000, "t", "t", 10**6)
SAMPLES = [
    REF,
    messages.StagedReport(REF, 2000, 10**9, 3, False),
    TASK,
    EXTRACTED,
    messages.ArchivedTask(TASK, "archive/x/children/t.json", 8000, 1000, 7000, 4, 10**6),
]


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).__name__)
def test_messages_are_small_frozen_and_carry_no_bytes(message):
    assert len(pickle.dumps(message)) < 1024
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.revision = "x"  # type: ignore[misc]
    for field in dataclasses.fields(message):
        assert "bytes" not in str(field.type)  # the type, e.g. "int" (field names may say bytes)


LEASE = Lease("run/step", "2030-01-01T10:20:00.000Z", "2030-01-01T09:15:00.000Z")


def test_workdir_is_private_leased_and_removed_even_on_error(tmp_path: Path):
    seen = {}
    with pytest.raises(RuntimeError), private_workdir(tmp_path, LEASE) as wd:
        seen["mode"] = stat.S_IMODE(wd.stat().st_mode)
        seen["lease"] = json.loads((wd / LEASE_FILE).read_text())
        seen["bucket"] = wd.parent.name
        (wd / "x").write_bytes(b"work")
        raise RuntimeError("boom")
    assert seen["mode"] == 0o700 and seen["lease"]["owner"] == "run/step"
    assert seen["bucket"] == "2030010110"  # the hour it may be deleted: max(lease, deadline)
    assert list(tmp_path.rglob("w-*")) == []


def test_a_lease_is_due_only_when_lease_and_deadline_have_both_elapsed():
    from datetime import UTC, datetime

    assert not LEASE.due(datetime(2030, 1, 1, 9, 30, tzinfo=UTC))  # deadline passed, lease live
    assert LEASE.due(datetime(2030, 1, 1, 10, 20, tzinfo=UTC))


def test_the_core_never_imports_dagster():
    core = Path(__file__).resolve().parents[2] / "report_pipeline" / "core"
    modules = sorted(core.rglob("*.py"))
    assert len(modules) > 40  # the boundary folders are walked too
    for module in modules:
        tree = ast.parse(module.read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [n for n in names if n.split(".")[0] == "dagster"], module.name

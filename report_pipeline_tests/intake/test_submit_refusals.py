"""`report-pipeline submit`: each refusal class has its message and exit code, and nothing is
written, registered or launched. The URL points at a closed loopback port, so an attempt to
reach Dagster would end with the Dagster exit code instead."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pymupdf
import pytest

from report_pipeline.cli import EXIT_DAGSTER, EXIT_ERROR, SUBMIT_CLASSES, main
from report_pipeline.core.intake import submission
from report_pipeline_tests.clock import month
from report_pipeline_tests.conftest import files_under
from report_pipeline_tests.intake.live import free_port

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def settled_without_waiting(monkeypatch) -> None:
    """`submit` waits out the inbox's settle period (2 s) for a file changed just now, and a
    copy's ctime is always now; here the wait passes at once, the file unchanged, as it would
    after 2 s (test_intake_signals.py waits and refuses a file still being written)."""
    real = submission.quiet
    monkeypatch.setattr(submission, "quiet", lambda source, ref, settle_seconds: real(
        source, ref, settle_seconds, sleep=lambda seconds: None))  # fmt: skip


@pytest.fixture
def env(tmp_path: Path, monkeypatch) -> Path:
    for name, folder in [("INBOX", "inbox"), ("STORE", "store"), ("WORK", "work")]:
        monkeypatch.setenv(f"REPORT_PIPELINE_{name}", str(tmp_path / folder))
    (tmp_path / "inbox").mkdir()
    return tmp_path


def submit(ref, month: str = "2026-09", *extra: str) -> int:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    return main(["submit", str(ref), "--month", month, "--url", url, *extra])


def too_many_pages(folder: Path) -> Path:
    doc = pymupdf.open()
    for _ in range(2001):
        doc.new_page(width=72, height=72)
    folder.mkdir(parents=True, exist_ok=True)
    doc.save(folder / "long.pdf")
    return folder / "long.pdf"


def oversized(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "huge.pdf", "wb") as handle:  # sparse: 256 MiB + 1 byte of zeros
        handle.truncate(256 * 1024 * 1024 + 1)
    return folder / "huge.pdf"


def outside(env: Path) -> Path:
    (env / "elsewhere.pdf").write_bytes(b"%PDF-1.7")
    return env / "elsewhere.pdf"


def leaving_link(env: Path, drop) -> Path:
    link = drop("no_images.pdf", folder="2026-09").parent / "link.pdf"
    link.symlink_to(outside(env))
    return link


NOT_YET = month(0)  # this month: its partition opens when it ends
CASES = [  # (refusal class, code, message, how to make the reference, month)
    ("authorization", "not_authorized", "reference is outside every configured source",
     lambda env, drop: outside(env), "2026-09"),
    ("authorization", "not_authorized", "reference contains '..' (path traversal)",
     lambda env, drop: f"{env}/inbox/../elsewhere.pdf", "2026-09"),
    ("authorization", "not_authorized", "reference is a link that leaves its source",
     leaving_link, "2026-09"),
    ("reference", "missing", "no such report in the source",
     lambda env, drop: env / "inbox" / "2026-09" / "absent.pdf", "2026-09"),
    ("reference", "not_regular", "reference is not a regular file",
     lambda env, drop: drop("no_images.pdf", folder="2026-09").parent, "2026-09"),
    ("month", "bad_month", "month must look like YYYY-MM, got '2026-9'",
     lambda env, drop: drop("no_images.pdf", folder="2026-09"), "2026-9"),
    ("month", "unknown_partition", f"{NOT_YET} is not a monthly partition yet",
     lambda env, drop: drop("no_images.pdf", folder="uploads"), NOT_YET),
    ("month", "month_mismatch", "reference is in the 2026-08 folder, not 2026-09",
     lambda env, drop: drop("no_images.pdf", folder="2026-08"), "2026-09"),
    ("size", "too_large", "report is larger than 268435456 bytes",
     lambda env, drop: oversized(env / "inbox" / "uploads"), "2026-09"),
    ("signature", "not_pdf", "no %PDF- signature within the first 1,024 bytes",
     lambda env, drop: drop("not_a_pdf.pdf", folder="uploads"), "2026-09"),
    ("pages", "too_many_pages", "PDF has 2001 pages; the limit is 2000",
     lambda env, drop: too_many_pages(env / "inbox" / "uploads"), "2026-09"),
    ("unreadable", "encrypted", "PDF is encrypted; submit an unencrypted copy",
     lambda env, drop: drop("encrypted.pdf", folder="uploads"), "2026-09"),
    ("page_tree", "bad_page_tree", "PDF page tree is malformed: a page or page node is missing",
     lambda env, drop: drop("truncated_pdf.pdf", folder="uploads"), "2026-09"),
    ("page_tree", "page_count_mismatch", "PDF page tree holds 2500 pages but its /Count says 1",
     lambda env, drop: drop("count_too_small.pdf", folder="uploads"), "2026-09"),
    ("page_tree", "page_count_mismatch", "PDF page tree holds 3 pages but its /Count says 1000",
     lambda env, drop: drop("count_too_large.pdf", folder="uploads"), "2026-09"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "code", "message", "make", "month"), CASES)
def test_each_refusal_has_its_message_and_exit_code_and_writes_nothing(
    env, drop, capsys, kind, code, message, make, month
):
    ref = make(env, drop)
    before = files_under(env / "inbox")
    assert submit(ref, month) == SUBMIT_CLASSES[kind][0]
    err = capsys.readouterr().err
    assert err.startswith(f"report-pipeline: refused ({code}): {message}")
    assert str(env) not in err and Path(ref).name not in err
    assert files_under(env / "inbox") == before  # nothing registered
    assert files_under(env / "store") == [] and files_under(env / "work") == []


def test_a_file_a_later_arrival_superseded_is_refused_with_the_reference_exit_code(
    env, drop, capsys
):
    past = month(-3)
    older = drop("no_images.pdf", folder=past, name="report.pdf", age=100)
    drop("repeated_image.pdf", folder=past, name="corrected.pdf")  # newer: the month's report
    assert submit(older, past) == SUBMIT_CLASSES["reference"][0]
    assert capsys.readouterr().err == (
        f"report-pipeline: refused (superseded): this report's content arrived in {past} before "
        "corrected.pdf, which superseded it; submit a corrected file with new content\n"
    )
    assert files_under(env / "work") == []


def test_exit_codes_are_distinct_per_class_and_documented_in_the_help(capsys):
    codes = [code for code, _ in SUBMIT_CLASSES.values()] + [EXIT_DAGSTER, EXIT_ERROR, 0, 2]
    assert len(set(codes)) == len(codes)
    with pytest.raises(SystemExit):
        main(["submit", "--help"])
    help_text = capsys.readouterr().out
    assert all(f"  {code}  {kind}:" in help_text for kind, (code, _) in SUBMIT_CLASSES.items())
    assert f"  {EXIT_ERROR}   an unexpected error" in help_text


def test_an_unreachable_webserver_has_its_own_exit_code_and_registers_nothing(env, drop, capsys):
    upload = drop("no_images.pdf", folder="uploads")
    assert submit(upload, "2026-09", "--json") == EXIT_DAGSTER
    answer = json.loads(capsys.readouterr().out)
    assert answer["status"] == "error" and answer["exit_code"] == EXIT_DAGSTER
    assert answer["message"].startswith("Dagster webserver unavailable")
    assert not (env / "inbox" / "2026-09").exists()


def test_refusals_are_one_json_object_for_machines(env, drop, capsys):
    assert submit(drop("encrypted.pdf", folder="uploads"), "2026-09", "--json") == 16
    answer = json.loads(capsys.readouterr().out)
    assert answer == {
        "status": "refused", "exit_code": 16, "refusal": "encrypted",
        "refusal_class": "unreadable",
        "message": "refused (encrypted): PDF is encrypted; submit an unencrypted copy",
    }  # fmt: skip
    assert os.listdir(env / "inbox") == ["uploads"]

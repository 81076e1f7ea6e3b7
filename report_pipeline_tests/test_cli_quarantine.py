"""`report-pipeline quarantine list|show|decide` from a shell, on either deployment's store (the
local store; S3 on the moto server), with the documented exit codes."""

from __future__ import annotations

import json
import stat

import pytest

from report_pipeline.cli import main
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.review_cli import EXIT_CODES, EXIT_TRANSIENT
from report_pipeline_tests import s3 as s3_helpers
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.intake.live import free_port

pytestmark = pytest.mark.slow

MONTH = "2026-10"


def s3_env(endpoint: str, bucket: str) -> dict[str, str]:
    return {"REPORT_PIPELINE_DEPLOYMENT": "production", "REPORT_PIPELINE_S3_BUCKET": bucket,
            "REPORT_PIPELINE_S3_PREFIX": "pipeline", "REPORT_PIPELINE_S3_ENDPOINT": endpoint,
            **s3_helpers.CREDENTIALS, "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}  # fmt: skip


@pytest.fixture(params=["local", "production"])
def deployed(request, tmp_path, monkeypatch, small_report):
    """The monthly report in small (its two broken scans: conftest.small_report) archived for
    MONTH in the deployment's store, and `quarantine`'s environment pointing at it."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "local":
        env = {"REPORT_PIPELINE_STORE": str(tmp_path / "store")}
        store = LocalStore(tmp_path / "store")
    else:
        s3 = s3_helpers.fresh(request.getfixturevalue("s3_server"))
        env = s3_env(s3.endpoint, s3.bucket)
        store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    env["REPORT_PIPELINE_WORK"] = str(tmp_path / "work")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    run_report(store, small_report, PipelineSettings(tmp_path / "w"), "inbox", MONTH)
    return store


def listed(capsys) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["quarantine", "list", MONTH, "--json"]) == 0
    return {item["reason"]: item for item in json.loads(capsys.readouterr().out)}


def test_list_show_and_decide_with_their_exit_codes(deployed, tmp_path, capsys):
    queue = listed(capsys)
    assert sorted(queue) == ["signature_mismatch", "truncated"]
    mismatch, truncated = queue["signature_mismatch"], queue["truncated"]
    assert main(["quarantine", "show", MONTH, str(mismatch["sequence"]), "--out",
                 str(tmp_path / "review" / "look"), "--json"]) == 0  # fmt: skip
    shown = json.loads(capsys.readouterr().out)
    assert shown["preview"].endswith("preview.png") and shown["evidence"].endswith("evidence.bin")
    for made in ("review", "review/look"):  # a missing parent is made, private too
        assert stat.S_IMODE((tmp_path / made).stat().st_mode) == 0o700

    def decide(item, decision, *extra) -> int:
        return main(["quarantine", "decide", MONTH, str(item["sequence"]), decision,
                     "--reviewer", "ana", "--note", "seen", *extra])  # fmt: skip

    assert decide(truncated, "accept") == EXIT_CODES["cannot_accept"] == 33
    assert decide(truncated, "reject", "--revision", truncated["revision"]) == 0
    assert decide(truncated, "reject") == 0  # the same again: nothing changes
    assert "already rejected" in capsys.readouterr().out
    assert decide(truncated, "accept") == EXIT_CODES["already_decided"] == 32
    stale = decide(mismatch, "accept", "--revision", mismatch["revision"])
    assert stale == EXIT_CODES["revision_changed"] == 34  # listed before the reject
    assert decide(mismatch, "accept") == 0
    assert listed(capsys) == {}
    assert main(["quarantine", "decide", "2026-09", "1", "reject", "--reviewer", "a"]) == 30
    assert main(["quarantine", "decide", MONTH, "999999", "reject", "--reviewer", "a"]) == 31
    assert main(["quarantine", "decide", MONTH, "1", "reject", "--reviewer", "a b"]) == 35
    assert main(["quarantine", "decide", MONTH, "1", "reject", "--reviewer", "josé",
                 "--note", "seen\x1b[2J"]) == 35  # fmt: skip
    err = capsys.readouterr().err
    assert "refused (unknown_month)" in err and str(tmp_path) not in err
    assert "note has a control character (U+001B) at character 5" in err and "\x1b" not in err


def test_an_unreachable_store_is_transient_and_says_retry(monkeypatch, capsys):
    for name, value in s3_env(f"http://127.0.0.1:{free_port()}", "nowhere").items():
        monkeypatch.setenv(name, value)
    assert main(["quarantine", "list", MONTH]) == EXIT_TRANSIENT == 36
    assert "retry" in capsys.readouterr().err


@pytest.fixture
def damaged_store(tmp_path, monkeypatch) -> LocalStore:
    """cut_off_streams.pdf archived for MONTH in the local store `quarantine` reads."""
    monkeypatch.delenv("REPORT_PIPELINE_DEPLOYMENT", raising=False)
    monkeypatch.setenv("REPORT_PIPELINE_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("REPORT_PIPELINE_WORK", str(tmp_path / "work"))
    store = LocalStore(tmp_path / "store")
    run_report(store, fixture_pdf("cut_off_streams.pdf"), PipelineSettings(tmp_path / "w"),
               "inbox", MONTH)  # fmt: skip
    return store


def test_a_damaged_page_is_listed_with_what_broke_off_and_decided_with_page(damaged_store, capsys):
    capsys.readouterr()
    assert main(["quarantine", "list", MONTH]) == 0
    said = capsys.readouterr()
    assert f"{MONTH}  page 2     damaged (1 stream(s) broke off) stream_cut_off" in said.out
    assert "    form (object 11): its data ends early, inside the operator r\n" in said.out
    assert "    2 image(s) drawn before the break (#2-#3)\n" in said.out
    assert said.err == "1 undecided, 3 damaged page(s) undecided\n"
    assert main(["quarantine", "list", MONTH, "--json"]) == 0
    listed_items = json.loads(capsys.readouterr().out)
    pages = {i["page"]: i for i in listed_items if i["kind"] == "page"}
    assert sorted(pages) == [1, 2, 3] and pages[2]["drawn"] == [2, 3]
    assert [i["kind"] for i in listed_items if "sequence" in i] == ["image"]

    def decide(*words) -> int:
        return main(["quarantine", "decide", MONTH, *words, "--reviewer", "ana"])

    assert decide("accept", "--page", "2", "--revision", pages[2]["revision"]) == 0
    assert f"accepted; {MONTH} is now revision" in capsys.readouterr().out
    assert decide("reject", "--page", "2") == EXIT_CODES["already_decided"] == 32
    assert decide("reject", "--page", "7") == EXIT_CODES["unknown_page"] == 31
    assert decide("reject") == EXIT_CODES["bad_input"] == 35  # neither an image nor a page
    assert decide("1", "reject", "--page", "1") == 35  # both
    assert "name one item" in capsys.readouterr().err
    assert main(["quarantine", "list", MONTH, "--json"]) == 0
    left = [i["page"] for i in json.loads(capsys.readouterr().out) if i["kind"] == "page"]
    assert left == [1, 3]

"""`report-pipeline show`: the editor's "what happened on page 87?", answered from the store of
either deployment (the local store; S3 on the moto server), with documented exit codes."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from report_pipeline.cli import EXIT_NO_PAGE, EXIT_NOT_ARCHIVED, main
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.records import Manifest
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.model.store_json import child_to_json
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.review.decide import decide
from report_pipeline.core.review.pages import decide_page
from report_pipeline.core.review.queue import pending
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline_tests import s3 as s3_helpers
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow

MONTH = "2026-10"


@dataclass(frozen=True)
class Archived:
    """A report archived for MONTH in a deployment's store, and what `show` finds it by."""

    env: dict[str, str]
    manifest: Manifest
    three: int  # a complete page of 3 images
    truncated: int  # the page of the truncated scan
    pages: int
    accounted: int


@pytest.fixture(scope="module", params=["local", "production"])
def archived(request, tmp_path_factory, shared_run, small_report) -> Archived:
    """Once per deployment (the tests only read it): locally the monthly report (the session's
    one run of it, conftest.shared_run), "what happened on page 87?"; on S3 the monthly report
    in small (conftest.small_report), whose 3 pages ask the same of the S3 store (a run of the
    140 pages on the moto server costs ~7 s of CPU)."""
    if request.param == "local":
        folder, manifest = shared_run("monthly_report.pdf")
        return Archived({"REPORT_PIPELINE_STORE": str(folder)}, manifest, 87, 50, 140, 423)
    s3 = s3_helpers.fresh(request.getfixturevalue("s3_server"))
    env = {"REPORT_PIPELINE_DEPLOYMENT": "production", "REPORT_PIPELINE_S3_BUCKET": s3.bucket,
           "REPORT_PIPELINE_S3_PREFIX": "pipeline", "REPORT_PIPELINE_S3_ENDPOINT": s3.endpoint,
           **s3_helpers.CREDENTIALS, "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}  # fmt: skip
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    settings = PipelineSettings(tmp_path_factory.mktemp(request.param) / "work")
    return Archived(env, run_report(store, small_report, settings, "inbox", MONTH), 1, 2, 3, 11)


@pytest.fixture
def deployed(archived, monkeypatch) -> Archived:
    """`show`'s environment for the archived deployment."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in archived.env.items():
        monkeypatch.setenv(name, value)
    return archived


def test_a_page_lists_exactly_the_manifests_records_for_it(deployed, capsys):
    page = deployed.three
    assert main(["show", MONTH, "--page", str(page), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert records == [child_to_json(c) for c in deployed.manifest.children if c.page == page]
    assert len(records) == 3 and {r["page"] for r in records} == {page}


def test_a_page_in_words_names_each_occurrences_fate_and_key(deployed, capsys):
    page, children = deployed.truncated, deployed.manifest.children
    assert main(["show", MONTH, "--page", str(page)]) == 0
    out = capsys.readouterr().out
    (bad,) = [c for c in children if c.page == page and c.state == "quarantined"]
    assert f"#{bad.sequence}  {bad.origin}  quarantined (truncated" in out
    for child in (c for c in children if c.page == page and c.object_key):
        assert child.object_key in out
    assert f"{bad.width}x{bad.height}  evidence {bad.stream_bytes:,} bytes" in out  # not "0 bytes"
    assert str(fixture_pdf("monthly_report.pdf").parent) not in out


def test_without_a_page_the_month_and_its_page_counts(deployed, capsys):
    manifest = deployed.manifest
    assert main(["show", MONTH]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"report inbox-{MONTH}  revision {manifest.parent_revision}")
    assert f"{deployed.three:>6}       3         3            0  complete" in out
    assert "reviewed" not in out  # nothing decided: the summary `make demo` prints, unchanged
    assert main(["show", MONTH, "--json"]) == 0
    month = json.loads(capsys.readouterr().out)
    assert month["counts"]["accounted"] == deployed.accounted
    assert len(month["pages"]) == deployed.pages


def test_nothing_archived_and_no_such_page_have_their_own_codes(deployed, capsys):
    assert main(["show", "2026-09"]) == EXIT_NOT_ARCHIVED
    assert capsys.readouterr().err == "report-pipeline: nothing archived for 2026-09\n"
    past_the_end = str(deployed.manifest.counts.pages + 1)
    assert main(["show", MONTH, "--page", past_the_end, "--json"]) == EXIT_NO_PAGE
    answer = json.loads(capsys.readouterr().out)
    assert answer["exit_code"] == EXIT_NO_PAGE and answer["status"] == "missing"
    with pytest.raises(SystemExit) as usage:
        main(["show", "2026-9"])
    assert usage.value.code == 2


def test_a_reviewed_month_names_each_decision_its_reviewer_time_and_note(
    tmp_path, monkeypatch, capsys, small_report
):
    """The monthly report in small: its broken scans on pages 2 and 3 (conftest.small_report)."""
    store = LocalStore(tmp_path / "store")
    monkeypatch.delenv("REPORT_PIPELINE_DEPLOYMENT", raising=False)
    monkeypatch.setenv("REPORT_PIPELINE_STORE", str(tmp_path / "store"))
    run_report(store, small_report, PipelineSettings(tmp_path / "w"), "inbox", MONTH)
    queue = {i.reason: i for i in pending(store, [MONTH])}
    cut, odd = queue["truncated"], queue["signature_mismatch"]
    rejected = decide(store, MONTH, cut.sequence, "reject", "josé", "cut off", utc_now())
    accepted = decide(store, MONTH, odd.sequence, "accept", "Zoë.Ng", "", utc_now()).manifest
    assert main(["show", MONTH]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"report inbox-{MONTH}  revision {accepted.parent_revision}")
    decision = {c.sequence: c.review for c in accepted.children if c.review}
    assert "\n  reviewed              2 decisions\n" in out
    assert (f"    #{cut.sequence}  page 2  truncated  rejected by josé "
            f'{decision[cut.sequence].decided_at}  "cut off"\n') in out  # fmt: skip
    assert (f"    #{odd.sequence}  page 3  accepted by Zoë.Ng "
            f"{decision[odd.sequence].decided_at}, signature_mismatch lifted\n") in out  # fmt: skip
    assert main(["show", MONTH, "--page", "2"]) == 0
    page = capsys.readouterr().out
    assert f"evidence {cut.stream_bytes:,} bytes" in page
    assert f"      reviewed: rejected by josé {decision[cut.sequence].decided_at}" in page
    assert rejected.revision != accepted.parent_revision


def test_a_damaged_page_says_what_broke_off_what_it_drew_before_and_its_review(
    tmp_path, monkeypatch, capsys
):
    store = LocalStore(tmp_path / "store")
    monkeypatch.delenv("REPORT_PIPELINE_DEPLOYMENT", raising=False)
    monkeypatch.setenv("REPORT_PIPELINE_STORE", str(tmp_path / "store"))
    run_report(store, fixture_pdf("cut_off_streams.pdf"), PipelineSettings(tmp_path / "w"),
               "inbox", MONTH)  # fmt: skip
    assert main(["show", MONTH, "--page", "2"]) == 0
    page = capsys.readouterr().out
    assert ("  damaged (a page-level quarantine): a content stream broke off, what followed is "
            "unknown\n    form (object 11): its data ends early, inside the operator r\n"
            "    drawn before the break: 2 images (#2, #3)\n"
            f"    review: undecided (report-pipeline quarantine decide {MONTH} --page 2 "
            "accept|reject)\n  #2  xobject  archived") in page  # fmt: skip
    decided = decide_page(store, MONTH, 2, "accept", "ana", "as printed", utc_now()).manifest
    assert main(["show", MONTH]) == 0
    month = capsys.readouterr().out
    assert "\n  damaged pages         3\n    page 1  stream_cut_off  undecided\n" in month
    when = decided.pages[1].review.decided_at
    assert f'\n    page 2  stream_cut_off  accepted by ana {when}  "as printed"\n' in month
    assert (
        "\n  reviewed              1 decision\n    page 2  damaged page  accepted by ana" in month
    )
    assert "\n     2       3         3            0  damaged\n" in month
    assert main(["show", MONTH, "--page", "2"]) == 0
    assert f"    reviewed: accepted by ana {when}" in capsys.readouterr().out


def test_a_page_whose_streams_mupdf_repaired_says_so(tmp_path, monkeypatch, capsys):
    store = LocalStore(tmp_path / "store")
    monkeypatch.delenv("REPORT_PIPELINE_DEPLOYMENT", raising=False)
    monkeypatch.setenv("REPORT_PIPELINE_STORE", str(tmp_path / "store"))
    run_report(store, fixture_pdf("repaired_streams.pdf"), PipelineSettings(tmp_path / "w"),
               "inbox", MONTH)  # fmt: skip
    assert main(["show", MONTH, "--page", "1"]) == 0
    page = capsys.readouterr().out
    assert ("  repaired: 2 content streams whose data ended early or without its checksum; its "
            "operators parse to the end\n") in page  # fmt: skip
    assert "damaged" not in page
    assert main(["show", MONTH]) == 0
    assert (
        "\n  repaired streams      3 (ended early or without their checksum, operators whole)\n"
        in (capsys.readouterr().out)
    )

import hashlib
import logging
import os
import shutil
import time

import dagster as dg
import pytest

from report_pipeline.core.intake.sources import ReportRef
from report_pipeline.definitions import build_defs
from report_pipeline.defs.deployment.resources import PipelineSettingsResource
from report_pipeline.defs.reports.assets import report_manifest
from report_pipeline.defs.reports.ops import stage_report_run_config
from report_pipeline_tests.conftest import files_under, fixture_pdf
from report_pipeline_tests.defs.conftest import events, materialization

pytestmark = pytest.mark.slow

PAGE_KEYS = ("pages", "first_page", "last_page")


def all_text(result, instance) -> str:
    """Every log line and event message the run produced, with all metadata rendered."""
    records = instance.all_logs(result.run_id)
    return "\n".join(f"{r.user_message} {r.dagster_event!r}" for r in records)


def test_monthly_report_materializes_with_counts_metrics_and_per_page_rows(
    inbox, materialize, instance
):
    inbox("monthly_report.pdf")
    result = materialize()
    assert result.success
    meta = materialization(result)
    assert meta["state"] == "complete"
    assert (meta["pages"], meta["expected"], meta["accounted"]) == (140, 423, 423)
    assert (meta["archived"], meta["quarantined"], meta["distinct_images"]) == (421, 2, 285)
    assert meta["duplicate_occurrences"] == 136 and meta["archived_bytes"] > 0
    assert meta["validated_first_attempt_pct"] == 100.0  # quarantined at once: no retry
    assert meta["quarantined_pct"] == round(100 * 2 / 423, 2)
    assert meta["queue_age_p95_seconds"] >= 0 and meta["decode_peak_rss_mib"] > 50
    quarantined = [(r.data["page"], r.data["reason"]) for r in meta["quarantined_items"].records]
    assert quarantined == [(50, "truncated"), (100, "signature_mismatch")]
    archive_steps = events(result, "STEP_OUTPUT", "archive_pages")
    tables = [e.event_specific_data.metadata["page_table"].value for e in archive_steps]
    rows = [r.data for table in tables for r in table.records]
    assert [r["page"] for r in rows] == list(range(1, 141))  # per-page visibility in the UI
    assert sum(r["images"] for r in rows) == 423
    for step in ("extract_pages", "archive_pages"):  # each step says which pages it covers
        (output,) = events(result, "STEP_OUTPUT", step)
        covered = {k: output.event_specific_data.metadata[k].value for k in PAGE_KEYS}
        assert covered == {"pages": 140, "first_page": 1, "last_page": 140}, step
    again = materialization(materialize())  # the same revision: its manifest is reused
    assert again["reused_existing_manifest"] is True
    for meta_of_run in (meta, again):  # the month's latest materialization answers per page
        summary = [r.data for r in meta_of_run["page_table"].records]
        assert [r["page"] for r in summary] == list(range(1, 141))
        assert summary[86] == {"page": 87, "images": 3, "archived": 3, "quarantined": 0,
                               "state": "complete"}  # fmt: skip


def test_a_repaired_report_says_so_on_the_step_and_the_asset(inbox, materialize, tmp_path):
    inbox("broken_xref.pdf")
    result = materialize()
    assert result.success and materialization(result)["repaired"] is True
    (staged,) = [
        e for e in events(result, "STEP_OUTPUT", "stage_report")
        if e.event_specific_data.step_output_handle.output_name == "staged"
    ]  # fmt: skip
    assert staged.event_specific_data.metadata["repaired"].value is True
    inbox("broken_xref.pdf", month="2026-09")
    refusing = PipelineSettingsResource(work_root=str(tmp_path / "w"), refuse_repaired=True)
    (failure,) = events(materialize("2026-09", settings=refusing), "STEP_FAILURE")
    assert "report refused (damaged)" in failure.step_failure_data.error.message


def test_hidden_images_are_accounted_for_unarchived_unless_the_settings_archive_them(
    inbox, materialize, tmp_path
):
    """hidden_content.pdf: 7 images shown, 11 a viewer does not show (fixtures/_hidden.py)."""
    inbox("hidden_content.pdf")
    result = materialize()
    meta = materialization(result)
    assert result.success and (meta["archived"], meta["hidden"], meta["state"]) == (
        7,
        11,
        "complete",
    )
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["manifest_complete"] and checks["quarantine_rate"]
    inbox("hidden_content.pdf", month="2026-09")
    keeping = PipelineSettingsResource(work_root=str(tmp_path / "w"), archive_hidden=True)
    meta = materialization(materialize("2026-09", settings=keeping))
    assert (meta["archived"], meta["hidden"], meta["state"]) == (18, 0, "complete")


def test_one_task_per_page_when_asked(inbox, materialize, tmp_path, small_report):
    inbox(small_report)  # 3 pages, the logo on each: each task archives it, one object
    result = materialize(
        settings=PipelineSettingsResource(work_root=str(tmp_path / "w"), pages_per_task=1)
    )
    assert result.success
    keys = sorted(e.step_key for e in events(result, "STEP_SUCCESS", "extract_pages"))
    assert keys == [f"report_manifest.extract_pages[page_{n:04d}]" for n in range(1, 4)]
    meta = materialization(result)
    assert (meta["archived"], meta["quarantined"], meta["distinct_images"]) == (9, 2, 7)


SIGNATURES = ("\\xff\\xd8\\xff", "\\x89PNG", "%PDF-", "\xff\xd8\xff", "\x89PNG")


def test_no_source_path_or_bytes_reach_logs_events_or_output_and_the_file_is_named_once(
    inbox, materialize, instance, tmp_path, capfd, caplog
):
    caplog.set_level("DEBUG")
    inbox("truncated_jpeg.pdf", as_name="Confidential Board Pack.pdf")
    result = materialize()
    assert result.success
    console = capfd.readouterr()
    everything = "\n".join(
        [all_text(result, instance), console.out, console.err, caplog.text,
         *(repr(e.event_specific_data) for e in result.all_events)]
    )  # fmt: skip
    assert len(everything) > 10_000  # the whole run's logs, events and console output
    for secret in (str(tmp_path), *SIGNATURES):
        assert secret not in everything, secret
    # which file was used: its name within the month folder, in the step's metadata only
    staged = events(result, "STEP_OUTPUT", "stage_report")[0].event_specific_data.metadata
    assert staged["source_file"].value == "Confidential Board Pack.pdf"
    assert "Confidential" not in everything.replace(repr(staged["source_file"]), "")


@pytest.mark.parametrize(
    ("name", "code"),
    [("encrypted.pdf", "encrypted"), ("not_a_pdf.pdf", "not_pdf"),
     ("truncated_pdf.pdf", "bad_page_tree"), ("count_too_large.pdf", "page_count_mismatch")],
)  # fmt: skip
def test_refused_reports_fail_clearly_once_and_write_nothing(
    inbox, materialize, tmp_path, name, code
):
    inbox(name)
    result = materialize()
    assert not result.success
    (failure,) = events(result, "STEP_FAILURE")
    assert failure.step_key == "report_manifest.stage_report"
    assert f"report refused ({code})" in failure.step_failure_data.error.message
    assert events(result, "STEP_UP_FOR_RETRY") == []
    ledger = tmp_path / "store" / "months" / "2026-10" / "arrivals" / "000001.json"
    assert files_under(tmp_path / "store") == [ledger]  # the month's arrivals, nothing else
    assert str(tmp_path) not in ledger.read_text() and f'"name":"{name}"' in ledger.read_text()


def test_a_month_without_a_report_is_not_a_failure_and_says_why(materialize, instance):
    result = materialize(month="2026-09")
    assert result.success and events(result, "STEP_FAILURE") == []
    assert result.get_asset_materialization_events() == []
    (warning,) = [e for e in instance.all_logs(result.run_id)
                  if "nothing to archive" in e.user_message]  # fmt: skip
    assert warning.user_message.startswith("no report (*.pdf) for 2026-09 in the inbox: ")
    assert warning.level == logging.WARNING


def test_a_newer_report_in_the_same_month_is_a_new_revision(inbox, materialize):
    inbox("repeated_image.pdf", as_name="v1.pdf")
    first = materialize()
    inbox("truncated_jpeg.pdf", as_name="v2.pdf")
    second = materialize()
    assert first.success and second.success
    staged = events(second, "STEP_OUTPUT", "stage_report")[0].event_specific_data.metadata
    assert staged["superseded_reports"].value == 1
    assert materialization(second)["revision"] != materialization(first)["revision"]
    assert materialization(second)["expected"] == 2


OLD = 1_700_000_000  # an mtime long past


def staged_output(result) -> dict:
    found = events(result, "STEP_OUTPUT", "stage_report")[0].event_specific_data.metadata
    return {k: v.value for k, v in found.items()}


def test_a_ui_launch_stages_the_latest_arrival_not_the_newest_mtime(
    inbox, materialize, tmp_path, clock
):
    month = clock.month(-2)
    report = inbox("repeated_image.pdf", month=month, as_name="report.pdf")
    os.utime(report, (OLD + 200, OLD + 200))
    first = materialize(month)
    assert staged_output(first)["source_file"] == "report.pdf"
    time.sleep(0.03)  # the file system's clock passes the month's first look
    corrected = tmp_path / "corrected.pdf"
    shutil.copyfile(fixture_pdf("truncated_jpeg.pdf"), corrected)
    os.utime(corrected, (OLD, OLD))  # older than report.pdf
    shutil.copy2(corrected, report.parent / "corrected.pdf")  # cp -p: arrives now
    second = materialize(month)
    staged = staged_output(second)
    assert (staged["source_file"], staged["superseded_files"]) == ("corrected.pdf", "report.pdf")
    assert staged["superseded_reports"] == 1 and staged["source_arrived_at"] > "2023"
    assert materialization(second)["revision"] != materialization(first)["revision"]
    os.utime(report)  # touched: the newest mtime, but not new content
    third = materialize(month)
    assert staged_output(third)["source_file"] == "corrected.pdf"
    assert materialization(third)["revision"] == materialization(second)["revision"]


def test_an_intake_run_of_a_superseded_content_ends_without_materializing(
    inbox, materialize, instance, resources, clock
):
    month = clock.month(-2)
    report = inbox("repeated_image.pdf", month=month, as_name="report.pdf")
    assert materialize(month).success
    intake = {"source": "inbox", "report_key": ReportRef("inbox", f"{month}/report.pdf").key,
              "source_hash": hashlib.sha256(report.read_bytes()).hexdigest()}  # fmt: skip
    inbox("truncated_jpeg.pdf", month=month, as_name="corrected.pdf")  # a later arrival
    result = dg.materialize(
        [report_manifest], partition_key=month, instance=instance, resources=resources,
        run_config=stage_report_run_config(intake), raise_on_error=False,
    )  # fmt: skip
    assert result.success and result.get_asset_materialization_events() == []
    (observed,) = [e for e in result.all_events if e.event_type_value == "ASSET_OBSERVATION"]
    why = observed.event_specific_data.asset_observation.metadata["not_the_months_report"].value
    assert why.startswith(f"{month}/report.pdf (sha256 {intake['source_hash'][:12]}) is no longer")
    assert "corrected.pdf arrived later" in why and why.endswith("nothing extracted")
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["manifest_complete"] is True  # judged on the month's archived revision


def test_a_launch_for_a_month_that_is_not_a_partition_is_refused_before_any_work(
    inbox, instance, resources, tmp_path
):
    """A GraphQL launch only tags the partition; Dagster does not validate the key then."""
    import dagster as dg

    from report_pipeline.defs.reports.assets import report_manifest
    from report_pipeline.defs.reports.jobs import extract_report_job
    from report_pipeline.defs.reports.manifest_table import manifest_table

    inbox("no_images.pdf", month="2999-01")
    defs = dg.Definitions(
        assets=[report_manifest, manifest_table], jobs=[extract_report_job], resources=resources
    )
    result = defs.resolve_job_def("extract_report_job").execute_in_process(
        instance=instance, tags={"dagster/partition": "2999-01"}, raise_on_error=False
    )
    (failure,) = events(result, "STEP_FAILURE")
    assert failure.step_key == "report_manifest.stage_report"
    assert "report refused (unknown_partition)" in failure.step_failure_data.error.message
    assert events(result, "STEP_UP_FOR_RETRY") == []
    assert files_under(tmp_path / "store") == []  # not even a deadline marker


def test_no_absolute_local_path_reaches_any_metadata(tmp_path, monkeypatch, inbox, instance):
    """The embedded default as deployed (its resources from the environment): store keys and
    paths relative to DAGSTER_HOME/storage, never the machine's folders."""
    for name in ("inbox", "store", "work"):
        monkeypatch.setenv(f"REPORT_PIPELINE_{name.upper()}", str(tmp_path / name))
    inbox("truncated_jpeg.pdf")
    job = build_defs("local").resolve_job_def("extract_report_job")
    result = job.execute_in_process(partition_key="2026-10", instance=instance)
    assert result.success
    shown = [repr(entry.asset_materialization or entry.dagster_event)
             for entry in instance.all_logs(result.run_id) if entry.is_dagster_event]  # fmt: skip
    assert any("report_manifest/2026-10" in text for text in shown)  # the output's own path
    for text in shown:
        assert "/tmp" not in text and str(instance.root_directory) not in text, text[:300]

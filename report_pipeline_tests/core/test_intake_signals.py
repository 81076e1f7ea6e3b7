"""Intake says what it does: `%PDF-` within the first 1,024 bytes (bytes before it recorded),
and `submit` reads only a file that has been quiet, as the sensor does."""

from __future__ import annotations

import pytest

from report_pipeline.core.intake.intake import SIGNATURE_WINDOW, RefusedInput, inspect_pdf
from report_pipeline.core.intake.sources import LocalInboxSource
from report_pipeline.core.intake.submission import STILL_ARRIVING, quiet
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pipeline import run_report
from report_pipeline_tests.conftest import fixture_pdf


@pytest.mark.slow
def test_bytes_before_the_signature_are_accepted_within_the_window_and_recorded(
    tmp_path, store, settings
):
    prefixed = tmp_path / "prefixed.pdf"
    prefixed.write_bytes(b"X" * 700 + fixture_pdf("truncated_jpeg.pdf").read_bytes())
    assert inspect_pdf(prefixed, Limits()).facts.signature_offset == 700
    manifest = run_report(store, prefixed, settings, "inbox", "2026-10")
    assert manifest.state == "complete" and manifest.signature_offset == 700
    plain = run_report(store, fixture_pdf("repeated_image.pdf"), settings, "inbox", "2026-09")
    assert plain.signature_offset is None  # none before it: the key is left out
    late = tmp_path / "late.pdf"
    late.write_bytes(b"X" * SIGNATURE_WINDOW + fixture_pdf("truncated_jpeg.pdf").read_bytes())
    with pytest.raises(RefusedInput) as refused:
        inspect_pdf(late, Limits())
    assert (refused.value.code, refused.value.message) == (
        "not_pdf", "no %PDF- signature within the first 1,024 bytes"
    )  # fmt: skip


def test_submit_waits_for_a_quiet_file_and_refuses_one_still_being_written(tmp_path):
    source = LocalInboxSource("inbox", tmp_path)
    report = tmp_path / "2026-10" / "report.pdf"
    report.parent.mkdir()
    report.write_bytes(b"%PDF-1.7 first half")
    ref = source.authorize(str(report))
    changed = source.changed_ns(ref)
    slept: list[float] = []
    assert quiet(source, ref, 2, clock=lambda: changed + 5 * 10**9, sleep=slept.append) == changed
    assert slept == []  # quiet for 5 s already: no wait
    assert quiet(source, ref, 2, clock=lambda: changed, sleep=slept.append) == changed
    assert slept == [2.0]  # just written: waited once, and it stayed the same

    def still_writing(seconds: float) -> None:
        with open(report, "ab") as more:
            more.write(b" second half")

    with pytest.raises(RefusedInput) as refused:
        quiet(source, ref, 2, clock=lambda: changed, sleep=still_writing)
    assert refused.value.code == STILL_ARRIVING

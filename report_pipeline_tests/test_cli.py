import json
import os
import stat

import pytest

from report_pipeline.cli import EXIT_ERROR, EXIT_REFUSED, main
from report_pipeline_tests.conftest import fixture_pdf
from report_pipeline_tests.refusals import UNUSABLE

pytestmark = pytest.mark.slow


def test_preview_writes_pngs_and_a_manifest_privately(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["preview", str(fixture_pdf("truncated_jpeg.pdf")), "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[5:7] == ["  quarantined           1", "    1 x truncated"]
    assert printed[-1] == f"  manifest              {out / 'manifest.json'}"
    pngs = list(out.glob("*.png"))
    assert len(pngs) == 1 and stat.S_IMODE(pngs[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert json.loads((out / "manifest.json").read_text())["counts"]["quarantined"] == 1


def test_preview_json_is_the_manifest(tmp_path, capsys):
    pdf = fixture_pdf("repeated_image.pdf")
    assert main(["preview", str(pdf), "--out", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["distinct_images"] == 2


@pytest.mark.parametrize(("name", "code"), [*sorted(UNUSABLE.items()), ("absent.pdf", "missing")])
def test_preview_refuses_bad_input_with_a_clear_message(tmp_path, capsys, name, code):
    pdf = fixture_pdf(name) if name != "absent.pdf" else tmp_path / name
    assert main(["preview", str(pdf), "--out", str(tmp_path / "out")]) == EXIT_REFUSED
    err = capsys.readouterr().err
    assert f"refused ({code})" in err and str(pdf.parent) not in err
    assert not list((tmp_path / "out").glob("*.png"))


def test_preview_page_cap_is_enforced(tmp_path, capsys):
    pdf = fixture_pdf("monthly_report.pdf")
    assert main(["preview", str(pdf), "--out", str(tmp_path), "--max-pages", "10"]) == 3
    assert "too_many_pages" in capsys.readouterr().err


def test_preview_never_ends_in_a_traceback(tmp_path, capsys):
    not_a_folder = tmp_path / "out"
    not_a_folder.write_text("a file where the folder should be")
    pdf = fixture_pdf("repeated_image.pdf")
    assert main(["preview", str(pdf), "--out", str(not_a_folder)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("report-pipeline: failed: unexpected ") and err.count("\n") == 1
    assert "Traceback" not in err and str(tmp_path) not in err


def test_the_cli_refuses_a_planted_scratch_link_with_a_documented_code(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # a shared $TMPDIR
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / f"report_pipeline-preview-{os.getuid()}").symlink_to(victim)
    pdf = str(fixture_pdf("no_images.pdf"))
    assert main(["preview", pdf, "--out", str(tmp_path / "out")]) == EXIT_ERROR
    assert "unsafe scratch folder" in capsys.readouterr().err
    assert list(victim.iterdir()) == [] and not (tmp_path / "out").exists()


def test_an_unexpected_error_goes_to_stderr_also_with_json(tmp_path, capsys):
    pdf = fixture_pdf("repeated_image.pdf")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    assert main(["preview", str(pdf), "--out", str(not_a_folder), "--json"]) == EXIT_ERROR
    out, err = capsys.readouterr()
    assert out == "" and json.loads(err)["exit_code"] == EXIT_ERROR

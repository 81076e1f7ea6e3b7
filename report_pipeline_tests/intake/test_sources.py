"""Sources and authorization, without Dagster: what a reference may point at."""

from __future__ import annotations

import hashlib
import os

import pytest

from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.sources import LocalInboxSource, registered_name
from report_pipeline.core.intake.submission import authorize
from report_pipeline_tests.conftest import files_under, fixture_pdf


def refusal(sources, reference: str) -> RefusedInput:
    with pytest.raises(RefusedInput) as caught:
        authorize(sources, reference)
    return caught.value


def test_a_file_in_a_month_folder_is_authorized_with_an_opaque_key(source, drop):
    path = drop("no_images.pdf", name="Board Pack.pdf")
    found, ref = authorize([source], str(path))
    assert found is source and ref.rel == "2026-10/Board Pack.pdf" and ref.month == "2026-10"
    assert len(ref.key) == 20 and "Board" not in ref.key


def test_relative_references_resolve_against_the_working_directory(source, drop, monkeypatch):
    path = drop("no_images.pdf")
    monkeypatch.chdir(path.parent.parent)
    assert authorize([source], "2026-10/no_images.pdf")[1].month == "2026-10"


def test_path_traversal_is_refused_even_when_it_lands_inside(source, drop):
    path = drop("no_images.pdf")
    sneaky = f"{path.parent}/../2026-10/{path.name}"
    refused = refusal([source], sneaky)
    assert refused.code == "not_authorized" and "traversal" in refused.message
    assert str(path.parent) not in str(refused)


def test_a_symlink_that_leaves_the_source_is_refused(source, drop, tmp_path):
    outside = tmp_path / "elsewhere.pdf"
    outside.write_bytes(fixture_pdf("no_images.pdf").read_bytes())
    link = drop("no_images.pdf").parent / "link.pdf"
    link.symlink_to(outside)
    refused = refusal([source], str(link))
    assert (refused.code, refused.message) == (
        "not_authorized", "reference is a link that leaves its source"
    )  # fmt: skip
    assert [e.ref.rel for e in source.entries("2026-10")] == ["2026-10/no_images.pdf"]


def test_files_outside_every_source_are_refused(source, tmp_path):
    other = tmp_path / "other.pdf"
    other.write_bytes(b"%PDF-1.7")
    assert refusal([source], str(other)).code == "not_authorized"
    assert refusal([source], "s3://bucket/2026-10/x.pdf").code == "not_authorized"


def test_directories_fifos_and_missing_files_are_refused(source, tmp_path):
    folder = tmp_path / "inbox" / "2026-10"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.pdf")
    assert refusal([source], str(folder)).code == "not_regular"
    assert refusal([source], str(folder / "pipe.pdf")).code == "not_regular"
    assert refusal([source], str(folder / "absent.pdf")).code == "missing"
    assert source.entries("2026-10") == []  # the sensor never lists a fifo either


def test_registering_copies_into_the_month_folder_once_by_content(source, drop, tmp_path):
    upload = drop("no_images.pdf", folder="uploads", name="x.pdf")
    digest = hashlib.sha256(upload.read_bytes()).hexdigest()
    size = upload.stat().st_size
    _, ref = authorize([source], str(upload))
    assert ref.month is None
    first = source.register(ref, "2026-09", digest, size)
    again = source.register(ref, "2026-09", digest, size)
    assert first == again and first.rel == f"2026-09/{registered_name(digest)}"
    assert len(files_under(tmp_path / "inbox" / "2026-09")) == 1
    in_place = source.register(first, "2026-09", digest, size)
    assert in_place == first  # already the month's file: nothing copied


def test_registering_refuses_bytes_that_changed_after_validation(source, drop, tmp_path):
    upload = drop("no_images.pdf", folder="uploads")
    _, ref = authorize([source], str(upload))
    with pytest.raises(RefusedInput, match="changed"):
        source.register(ref, "2026-09", "0" * 64, upload.stat().st_size)
    assert files_under(tmp_path / "inbox" / "2026-09") == []


def test_a_source_that_does_not_exist_yet_lists_nothing(tmp_path):
    assert LocalInboxSource("inbox", tmp_path / "nowhere").months() == []

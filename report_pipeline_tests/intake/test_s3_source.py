"""The S3 source behind the same interface, against a hand-written in-memory S3 (no network).
Server-backed tests belong to the production-backends issue."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from report_pipeline.core.intake import RefusedInput
from report_pipeline.core.s3_source import S3PrefixSource
from report_pipeline.core.submission import authorize
from report_pipeline_tests.conftest import fixture_pdf


class MissingKey(Exception):
    response = {"ResponseMetadata": {"HTTPStatusCode": 404}}


class FakeS3:
    """The five calls the source makes, over a dict; `lie` makes ContentLength claim less."""

    def __init__(self, objects: dict[str, bytes], lie: bool = False) -> None:
        self.objects, self.lie = objects, lie
        self.when = datetime(2026, 10, 31, tzinfo=UTC)

    def list_objects_v2(self, Bucket, Prefix, Delimiter="", ContinuationToken=None):  # noqa: N803
        keys = sorted(k for k in self.objects if k.startswith(Prefix))
        if Delimiter:
            folders = {Prefix + k[len(Prefix) :].split("/")[0] + "/" for k in keys if "/" in k}
            return {"CommonPrefixes": [{"Prefix": f} for f in sorted(folders)]}
        contents = [
            {"Key": k, "Size": len(self.objects[k]), "LastModified": self.when, "ETag": f'"{k}"'}
            for k in keys
        ]
        return {"Contents": contents}

    def head_object(self, Bucket, Key):  # noqa: N803
        if Key not in self.objects:
            raise MissingKey()
        return {"ContentLength": len(self.objects[Key]), "ETag": f'"{Key}"'}

    def get_object(self, Bucket, Key):  # noqa: N803
        body = self.objects[Key]
        return {"Body": io.BytesIO(body), "ContentLength": 10 if self.lie else len(body)}

    def copy_object(self, Bucket, Key, CopySource, CopySourceIfMatch):  # noqa: N803
        self.objects[Key] = self.objects[CopySource["Key"]]


@pytest.fixture
def s3() -> FakeS3:
    pdf = fixture_pdf("no_images.pdf").read_bytes()
    return FakeS3(
        {"team/2026-10/report.pdf": pdf, "team/2026-10/notes.txt": b"x", "team/up/a.pdf": pdf,
         "other/2026-10/report.pdf": pdf}
    )  # fmt: skip


def test_months_and_entries_come_from_the_prefix_only(s3):
    source = S3PrefixSource("team", "reports", "team/", client=s3)
    assert source.months() == [("2026-10", 0)]  # 0: S3 cannot say a folder is unchanged
    (entry,) = source.entries("2026-10")
    assert entry.ref.rel == "2026-10/report.pdf"
    assert entry.size == len(s3.objects["team/2026-10/report.pdf"])


def test_other_buckets_prefixes_and_traversal_are_refused(s3):
    source = S3PrefixSource("team", "reports", "team", client=s3)
    for reference in ["s3://elsewhere/team/2026-10/report.pdf", "s3://reports/other/x.pdf"]:
        with pytest.raises(RefusedInput, match="not_authorized.*outside every"):
            authorize([source], reference)
    with pytest.raises(RefusedInput, match="traversal"):
        authorize([source], "s3://reports/team/../other/2026-10/report.pdf")
    with pytest.raises(RefusedInput, match="missing"):
        authorize([source], "s3://reports/team/2026-10/absent.pdf")
    assert authorize([source], "s3://reports/team/2026-10/report.pdf")[1].month == "2026-10"


def test_downloads_are_capped_whatever_length_the_object_claims(tmp_path):
    big = b"%PDF-1.7\n" + bytes(5000)
    source = S3PrefixSource(
        "team", "reports", "team", client=FakeS3({"team/2026-10/Board Pack.pdf": big}, lie=True)
    )
    (entry,) = source.entries("2026-10")
    with pytest.raises(RefusedInput, match="too_large"), source.opened(entry.ref, tmp_path, 1000):
        pass
    with source.opened(entry.ref, tmp_path, 10_000) as path:
        assert path.read_bytes() == big and "Board" not in path.name  # a random private name


def test_registering_copies_the_object_into_the_month_prefix(s3):
    source = S3PrefixSource("team", "reports", "team", client=s3)
    _, ref = authorize([source], "s3://reports/team/up/a.pdf")
    registered = source.register(ref, "2026-09", "ab" * 32, len(s3.objects["team/up/a.pdf"]))
    assert registered.rel == "2026-09/abababababababab.pdf"
    assert s3.objects["team/2026-09/abababababababab.pdf"] == s3.objects["team/up/a.pdf"]

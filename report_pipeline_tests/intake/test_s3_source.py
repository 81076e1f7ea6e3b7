"""The S3 source behind the same interface, on a real S3 API server (moto on loopback)."""

from __future__ import annotations

import hashlib
import threading
import time
from urllib.parse import urlsplit

import pytest

from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.intake.month_report import choose_for_run
from report_pipeline.core.intake.s3_source import S3PrefixSource
from report_pipeline.core.intake.submission import authorize
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.stage_decision import (
    ClaimLost,
    RunAsks,
    RunIdentity,
    Staged,
    stage_for_run,
)
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError
from report_pipeline_tests import s3 as s3_helpers
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.slow


def put(s3, objects: dict[str, bytes]) -> None:
    for key, data in objects.items():
        s3.client.put_object(Bucket=s3.bucket, Key=key, Body=data)


@pytest.fixture
def pdf(s3) -> bytes:
    data = fixture_pdf("no_images.pdf").read_bytes()
    put(s3, {"team/2026-10/report.pdf": data, "team/2026-10/notes.txt": b"x",
             "team/up/a.pdf": data, "other/2026-10/report.pdf": data})  # fmt: skip
    return data


def test_months_and_entries_come_from_the_prefix_only(s3, pdf):
    source = S3PrefixSource("team", s3.bucket, "team/", s3.client)
    assert source.months() == [("2026-10", 0)]  # 0: S3 cannot say a folder is unchanged
    (entry,) = source.entries("2026-10")
    assert entry.ref.rel == "2026-10/report.pdf" and entry.size == len(pdf)


def test_listings_paginate(s3):
    put(s3, {f"team/2026-{m:02d}/r{n}.pdf": b"%PDF" for m in range(1, 13) for n in range(3)})
    calls = []
    s3.client.meta.events.register("before-call.s3.ListObjectsV2", lambda **kw: calls.append(1))
    source = S3PrefixSource("team", s3.bucket, "team", s3.client)
    source.page_size = 2  # as if S3's 1,000-key pages were two keys long
    assert [m for m, _ in source.months()] == [f"2026-{m:02d}" for m in range(1, 13)]
    assert len(source.entries("2026-05")) == 3
    assert len(calls) == 6 + 2  # 12 folders in pages of 2, then 3 keys in pages of 2


def test_other_buckets_prefixes_and_traversal_are_refused(s3, pdf):
    source = S3PrefixSource("team", s3.bucket, "team", s3.client)
    b = s3.bucket
    for reference in ["s3://elsewhere/team/2026-10/report.pdf", f"s3://{b}/other/x.pdf"]:
        with pytest.raises(RefusedInput, match="not_authorized.*outside every"):
            authorize([source], reference)
    with pytest.raises(RefusedInput, match="traversal"):
        authorize([source], f"s3://{b}/team/../other/2026-10/report.pdf")
    with pytest.raises(RefusedInput, match="missing"):
        authorize([source], f"s3://{b}/team/2026-10/absent.pdf")
    assert authorize([source], f"s3://{b}/team/2026-10/report.pdf")[1].month == "2026-10"


def test_downloads_are_capped_whatever_length_the_object_claims(s3, tmp_path):
    big = b"%PDF-1.7\n" + bytes(5000)
    put(s3, {"team/2026-10/Board Pack.pdf": big})

    def lie(parsed, **_kwargs):
        parsed["ContentLength"] = 10  # a stated length is never what the cap counts

    s3.client.meta.events.register("after-call.s3.GetObject", lie)
    source = S3PrefixSource("team", s3.bucket, "team", s3.client)
    (entry,) = source.entries("2026-10")
    with pytest.raises(RefusedInput, match="too_large"), source.opened(entry.ref, tmp_path, 1000):
        pass
    with source.opened(entry.ref, tmp_path, 10_000) as path:
        assert path.read_bytes() == big and "Board" not in path.name  # a random private name


def test_registering_copies_the_object_into_the_month_prefix(s3, pdf):
    source = S3PrefixSource("team", s3.bucket, "team", s3.client)
    _, ref = authorize([source], f"s3://{s3.bucket}/team/up/a.pdf")
    registered = source.register(ref, "2026-09", "ab" * 32, len(pdf))
    assert registered.rel == "2026-09/abababababababab.pdf"
    key = "team/2026-09/abababababababab.pdf"
    copied = s3.client.get_object(Bucket=s3.bucket, Key=key)
    assert copied["Body"].read() == pdf and copied["ServerSideEncryption"] == "AES256"


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [(503, "SlowDown", TransientStorageError), (500, "InternalError", TransientStorageError),
     (403, "AccessDenied", PermanentStorageError)],
)  # fmt: skip
def test_source_errors_use_the_store_mapping_and_hide_keys(s3, pdf, tmp_path, status, code, kind):
    client = s3_helpers.client(s3.endpoint, attempts=1)
    client.meta.events.register("before-send.s3", s3_helpers.answer(status, code))
    source = S3PrefixSource("team", s3.bucket, "team", client)
    reference = f"s3://{s3.bucket}/team/2026-10/report.pdf"
    for call in (source.months, lambda: source.entries("2026-10"),
                 lambda: authorize([source], reference)):  # fmt: skip
        with pytest.raises(kind, match=code) as caught:
            call()
        assert "report.pdf" not in str(caught.value) and "team/" not in str(caught.value)


def test_a_missing_bucket_is_permanent(s3):
    source = S3PrefixSource("team", "no-such-bucket-here", "team", s3.client)
    with pytest.raises(PermanentStorageError, match="NoSuchBucket"):
        source.months()


def test_on_s3_the_last_content_to_arrive_by_last_modified_is_the_months_report(
    s3, tmp_path, clock
):
    month, old = clock.month(-2), fixture_pdf("no_images.pdf").read_bytes()
    new = fixture_pdf("repeated_image.pdf").read_bytes()
    source = S3PrefixSource("team", s3.bucket, "team", s3.client)
    store, settings = LocalStore(tmp_path / "store"), PipelineSettings(tmp_path / "work")

    def chosen():
        return choose_for_run(store, [source], month, settings, "test")

    put(s3, {f"team/{month}/report.pdf": old})
    assert chosen().sha256 == hashlib.sha256(old).hexdigest()
    time.sleep(1.1)  # LastModified counts whole seconds
    put(s3, {f"team/{month}/report.pdf": new})  # overwritten in place: a new arrival
    assert chosen().sha256 == hashlib.sha256(new).hexdigest()
    time.sleep(1.1)
    put(s3, {f"team/{month}/report-again.pdf": old})  # the older content, uploaded again
    again = chosen()
    assert again.sha256 == hashlib.sha256(new).hexdigest()
    assert (again.file.name, again.file.superseded) == ("report.pdf", ("report-again.pdf",))


def test_a_months_first_look_stages_the_download_it_hashed(s3, tmp_path, clock):
    """The run that first sees a report on S3 fetches it once: the download it hashed for the
    month's ledger is the file it stages (checked against that sha256 again). A later run, whose
    ledger knows the content, fetches it once too; nothing is left in the work root."""
    month, data = clock.month(-2), fixture_pdf("repeated_image.pdf").read_bytes()
    put(s3, {f"team/{month}/report.pdf": data})
    source = S3PrefixSource("team", s3.bucket, "team", s3.client)
    gets: list[str] = []
    s3.client.meta.events.register(
        "before-call.s3.GetObject", lambda params, **_: gets.append(params["url_path"])
    )
    store, settings = LocalStore(tmp_path / "store"), PipelineSettings(tmp_path / "work")

    def run(run_id: str):
        identity = RunIdentity(run_id, "", lambda token: [])
        return stage_for_run(store, [source], settings, RunAsks(month), identity, run_id)

    first = run("run-1")
    assert isinstance(first, Staged) and first.claim.won
    assert first.staged.ref.source_hash == hashlib.sha256(data).hexdigest()
    assert gets == [f"/team/{month}/report.pdf"]
    gets.clear()
    assert isinstance(run("run-2"), ClaimLost)  # the ledger knows it: read once, to stage it
    assert gets == [f"/team/{month}/report.pdf"]
    assert not [p for p in (tmp_path / "work").rglob("*") if p.is_file()]


def test_on_s3_what_the_month_holds_is_read_once_beside_the_arrivals_write(s3, tmp_path, clock):
    """A run on the S3 store reads whether the month holds the revision already (its manifest,
    the month's record) while it records the arrival, side by side (the reads are sent while the
    arrival's write is still on its way), and staging does not read them again
    (core/archive/months.py `held`)."""
    month, data = clock.month(-2), fixture_pdf("repeated_image.pdf").read_bytes()
    put(s3, {f"team/{month}/report.pdf": data})
    source = S3PrefixSource("team", s3.bucket, "team", s3.client)
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    settings = PipelineSettings(tmp_path / "work")
    asked: list[str] = []
    writing = threading.Event()  # the arrival's write is held on its way while this is set

    def sent(request, **_) -> None:
        path = urlsplit(request.url).path
        if request.method == "PUT" and "/months/" in path and "/arrivals/" in path:
            writing.set()
            time.sleep(0.5)
            writing.clear()
        elif request.method == "GET":
            asked.append(f"{path} {'during the write' if writing.is_set() else ''}".strip())

    s3.client.meta.events.register("before-send.s3", sent)

    def run(run_id: str):
        asked.clear()
        identity = RunIdentity(run_id, "", lambda token: [])
        return stage_for_run(store, [source], settings, RunAsks(month), identity, run_id)

    first = run("run-1")
    assert isinstance(first, Staged)
    manifest = f"/{s3.bucket}/pipeline/{first.staged.ref.manifest_key}"
    assert [a for a in asked if a.startswith(manifest)] == [f"{manifest} during the write"]
    assert isinstance(run("run-2"), ClaimLost)  # the ledger knows it: nothing to write there
    assert [a for a in asked if a.startswith(manifest)] == [manifest]

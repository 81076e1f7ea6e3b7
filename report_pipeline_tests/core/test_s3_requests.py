"""What the S3 store asks the server for (moto on loopback): one PutObject per archived object
and no read-back (the archive check lists), deletes in DeleteObjects batches of 1,000, Content-MD5
on every write of bytes; per-key failures inside a 200 answer are classified."""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections import Counter
from dataclasses import replace

import pytest
from botocore.awsrequest import AWSResponse

from report_pipeline.core.archive import months
from report_pipeline.core.archive.publishing import record_children
from report_pipeline.core.archive.table import write_current_table
from report_pipeline.core.checks import month_checks
from report_pipeline.core.model import handover, keys
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.steps import extract, stage
from report_pipeline.core.storage import s3_store
from report_pipeline.core.storage.s3_store import S3Store
from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError
from report_pipeline_tests.s3 import Raw

pytestmark = pytest.mark.slow


def counted(s3) -> tuple[S3Store, Counter]:
    calls: Counter = Counter()
    s3.client.meta.events.register("before-call.s3", lambda model, **kw: calls.update([model.name]))
    return S3Store(s3.client, s3.bucket, prefix="pipeline"), calls


def test_deletes_go_in_batches_of_1000(s3, monkeypatch):
    monkeypatch.setattr(s3_store, "DELETE_BATCH", 4)  # as if 1,000 were four
    store, calls = counted(s3)
    for n in range(10):
        store.put_bytes(f"work/t/{n}.png", b"png")
    calls.clear()
    store.delete_many([f"work/t/{n}.png" for n in range(10)])
    assert calls == {"DeleteObjects": 3}
    assert [o.key for o in store.list("work")] == []


def test_a_report_costs_one_put_per_archived_object_and_no_read_back(s3, tmp_path, small_report):
    """The whole report on S3 (the monthly report in small: its logo on every page), then the
    month's archive check: one PutObject per distinct image (straight to its archive key), no
    COPY, no HEAD or GET per image; the check lists."""
    store, calls = counted(s3)
    settings = PipelineSettings(tmp_path / "work")
    manifest = run_report(store, small_report, settings, "inbox", "2026-10")
    objects = {c.object_key for c in manifest.children if c.object_key}
    assert len(objects) == 9 and manifest.counts.accounted == 11  # 7 images, 2 evidence
    stored = {
        o.key for o in store.list("archive") if "/images/" in o.key or "/quarantine/" in o.key
    }
    assert stored == objects
    assert "CopyObject" not in calls
    # the objects, plus eleven per report (one task): staged source, the planned draws, plan,
    # outcomes, children, manifest, audit event, three deadline markers (staging, the task,
    # the long clock) and the month's record of its current revision
    assert calls["PutObject"] == len(objects) + 11, calls
    # per report, not per image: the staged source, the planned draws, the plan, outcomes,
    # children, the manifest read before publishing (each one GET: a missing object is not
    # HEADed first), and so on
    assert calls["GetObject"] + calls["HeadObject"] <= 8, calls
    calls.clear()
    outcome = month_checks.archive_matches_manifest(store, manifest)
    assert outcome.passed and outcome.metadata["objects_matched_by_listing"] == len(objects)
    assert calls == {"ListObjectsV2": 1}


def deleted_with_errors(code: str):
    body = (
        "<DeleteResult><Error><Key>pipeline/work/t/a.png</Key>"
        f"<Code>{code}</Code><Message>injected</Message></Error></DeleteResult>"
    ).encode()

    def handler(request, **_kwargs):
        return AWSResponse(request.url, 200, {"Content-Type": "application/xml"}, Raw(body))

    return handler


@pytest.mark.parametrize(
    ("code", "kind"), [("SlowDown", TransientStorageError), ("AccessDenied", PermanentStorageError)]
)
def test_per_key_delete_errors_are_classified(s3, code, kind):
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    s3.client.meta.events.register("before-send.s3.DeleteObjects", deleted_with_errors(code))
    with pytest.raises(kind, match=f"delete work/t/a.png failed: {code}") as caught:
        store.delete_many(["work/t/a.png", "work/t/b.png"])
    assert s3.endpoint not in str(caught.value)


def test_every_write_of_bytes_sends_their_md5(s3):
    """Content-MD5 on put_bytes and put_if_absent: S3 refuses a body that arrives different
    (BadDigest), so the ETag a listing returns is the MD5 of the bytes the caller had."""
    store, sent = S3Store(s3.client, s3.bucket, prefix="pipeline"), []
    s3.client.meta.events.register(
        "before-send.s3.PutObject", lambda request, **_: sent.append(request.headers["Content-MD5"])
    )
    store.put_bytes("archive/a.png", b"png-a")
    store.put_if_absent("claims/rev/000001.json", b"{}")
    assert sent == [base64.b64encode(hashlib.md5(d).digest()) for d in (b"png-a", b"{}")]


def test_a_known_md5_is_sent_without_hashing_again(s3, monkeypatch):
    """Extraction hashes each image once, for the manifest, and hands the MD5 to the upload."""
    store, sent = S3Store(s3.client, s3.bucket, prefix="pipeline"), []
    s3.client.meta.events.register(
        "before-send.s3.PutObject", lambda request, **_: sent.append(request.headers["Content-MD5"])
    )
    known = hashlib.md5(b"png-b").hexdigest()
    monkeypatch.setattr(s3_store, "hashlib", None)  # the store hashing again would fail
    assert store.put_if_absent("archive/b.png", b"png-b", known)
    assert sent == [base64.b64encode(bytes.fromhex(known))]
    assert {o.key: o.md5 for o in store.list("archive")} == {"archive/b.png": known}


def test_a_file_is_streamed_once_with_a_checksum_s3_checks(s3, tmp_path):
    source = tmp_path / "report.pdf"
    source.write_bytes(b"%PDF-1.7 " * 10_000)
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    store.put_file("staged/r/rev.pdf", source)
    head = s3.client.head_object(Bucket=s3.bucket, Key="pipeline/staged/r/rev.pdf",
                                 ChecksumMode="ENABLED")  # fmt: skip
    crc = zlib.crc32(source.read_bytes()).to_bytes(4, "big")
    assert head["ChecksumCRC32"] == base64.b64encode(crc).decode()


def unstamped(children: list) -> list:
    return [replace(child, finished_at="") for child in children]  # when it was recorded


def test_the_archive_step_takes_the_outcomes_its_extraction_handed_over(s3, tmp_path, small_report):
    """In one process, archiving a task reads back no outcomes file (core/model/handover.py):
    extraction hands its bytes over. Taken once: a retry of the archive step, or a result that
    is not exactly that extraction's, reads the file, and records the same children."""
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    read: list[str] = []
    s3.client.meta.events.register(
        "before-parameter-build.s3.GetObject", lambda params, **_: read.append(params["Key"])
    )
    settings = PipelineSettings(tmp_path / "work")
    _, tasks = stage(store, small_report, "inbox", "2026-10", 0, settings, "plain")
    extracted = extract(store, tasks[0], settings, "plain")
    read.clear()
    _, children = record_children(store, extracted, 1)
    assert not [k for k in read if k.endswith("outcomes.json")], read
    assert unstamped(record_children(store, extracted, 1)[1]) == unstamped(children)  # a retry
    other = replace(extracted, started_at="2000-01-01T00:00:00.000Z")
    handover.hand_over(store, other, b"[]")  # another extraction's hand-over is not taken
    assert unstamped(record_children(store, extracted, 1)[1]) == unstamped(children)
    assert len([k for k in read if k.endswith("outcomes.json")]) == 2


def test_an_extraction_staged_in_this_process_reads_back_neither_source_nor_draws(
    s3, tmp_path, small_report
):
    """Staging hands the plan's source and draws over to its extractions in the same process
    (core/model/handover.py): extraction starts decoding at once, its work marker written
    beside, and still before any object it uploads. Another plan's extraction reads them."""
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    sent: list[str] = []
    s3.client.meta.events.register(
        "before-send.s3", lambda request, **_: sent.append(f"{request.method} {request.url}")
    )
    settings = PipelineSettings(tmp_path / "work")
    staged, tasks = stage(store, small_report, "inbox", "2026-10", 0, settings, "plain")
    sent.clear()
    extracted = extract(store, tasks[0], settings, "plain")
    assert not [s for s in sent if s.startswith("GET")], sent
    marker = next(i for i, s in enumerate(sent) if "/index/work/" in s)
    objects = [i for i, s in enumerate(sent) if "/images/" in s or "/quarantine/" in s]
    assert objects and marker < min(objects)
    assert extracted.validated
    handover.hand_over_plan(store, replace(tasks[0], queued_at="2000-01-01T00:00:00.000Z"),
                            small_report, b"{}")  # fmt: skip
    sent.clear()
    again = extract(store, tasks[0], settings, "plain")  # another plan's are at hand: not taken
    gets = [s for s in sent if s.startswith("GET")]
    assert any(staged.ref.staged_key in s for s in gets), gets
    assert (again.validated, again.quarantined) == (extracted.validated, extracted.quarantined)


def test_the_table_of_a_manifest_published_in_this_process_is_written_beside_the_months_check(
    s3, tmp_path, small_report
):
    """The manifest publishing left current, handed over in the process (handover.py), is not
    read back: its table is written beside the check that no later generation of the month's
    record exists (one wait on S3). The table is the one a read of the manifest gives; a
    hand-over of another generation is not taken."""
    store = S3Store(s3.client, s3.bucket, prefix="pipeline")
    manifest = run_report(store, small_report, PipelineSettings(tmp_path / "work"), "inbox",
                          "2026-10")  # fmt: skip
    key = keys.manifest_key(manifest.report_id, manifest.parent_revision)
    generation = months.current(store, "2026-10").head.generation
    sent: list[str] = []
    s3.client.meta.events.register(
        "before-send.s3", lambda request, **_: sent.append(f"{request.method} {request.url}")
    )
    handover.hand_over_manifest(store, key, generation, manifest)
    done, table_key, written = write_current_table(store, "2026-10", key, generation)
    assert written and done == manifest
    assert sorted(s.split(" ")[0] for s in sent) == ["HEAD", "PUT"], sent  # no GET
    assert keys.current_key("2026-10", generation + 1) in next(s for s in sent if "HEAD" in s)
    table = store.get_bytes(table_key, 1 << 20)
    store.delete_many([table_key])
    handover.hand_over_manifest(store, key, generation + 1, manifest)  # not this generation's
    sent.clear()
    assert write_current_table(store, "2026-10", key, generation)[2]
    assert any(s.startswith("GET") and key in s for s in sent), sent
    assert store.get_bytes(table_key, 1 << 20) == table  # the same table, read or handed over

"""Intake rules: where a month's report lives, input limits, and the idempotency key.

The report id comes from the source and month, never from a file name, and no file name from a
source is ever used on the worker or shown in a message.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import pymupdf

from report_pipeline.core.intake import page_tree
from report_pipeline.core.model import keys
from report_pipeline.core.model.messages import RevisionRef
from report_pipeline.core.model.records import SourceFacts
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.scratch.workdir import private_file
from report_pipeline.core.storage import store as storage

INSPECTION_FAILED = "inspection_failed"  # an unexpected error while a report was looked at
# Where `%PDF-` may start, as PDF readers accept it (bytes before it: a mail header, a polyglot);
# how many bytes precede it is recorded (SourceFacts.signature_offset)
SIGNATURE_WINDOW = 1024
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


class RefusedInput(Exception):
    """A report that will not be processed, with a stable code and a message safe to show."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Inspection:
    pages: int
    facts: SourceFacts  # repaired, encrypted (and its permissions), shared page-tree nodes


def check_month(month: str) -> str:
    if not _MONTH.match(month):
        raise RefusedInput("bad_month", f"month must look like YYYY-MM, got {month!r}")
    return month


def report_id_for(source_name: str, month: str) -> str:
    if not _SLUG.match(source_name):
        raise ValueError(f"source name {source_name!r} is not a slug")
    return keys.report_id(source_name, check_month(month))


def revision_for(report_id: str, source_hash: str, extractor_version: str) -> str:
    """The idempotency key (report_id, source_hash, extractor_version), hashed to a short id."""
    key = f"{report_id}\n{source_hash}\n{extractor_version}".encode()
    return hashlib.sha256(key).hexdigest()[:20]


@contextmanager
def _opened(source: Path, max_bytes: int) -> Iterator[BinaryIO]:
    """The report open for reading; refused as unreadable, or as too large when it already is
    larger than the cap (checked on the open file, before any byte is read). Errors never show
    the path."""
    try:
        src = open(source, "rb")  # noqa: SIM115 - closed below; errors must not show the path
    except OSError as exc:
        raise RefusedInput("unreadable", f"report cannot be read ({exc.strerror})") from None
    with src:
        if os.fstat(src.fileno()).st_size > max_bytes:
            raise RefusedInput("too_large", f"report is larger than {max_bytes} bytes")
        yield src


def stage_stream(source: Path, workdir: Path, max_bytes: int) -> tuple[Path, str, int]:
    """Copy `source` into a private file, hashing as it goes and never past `max_bytes`.

    A file already larger than the cap when opened is refused before any byte is copied."""
    digest = hashlib.sha256()
    with _opened(source, max_bytes) as src:
        dest = private_file(workdir, ".pdf")
        with open(dest, "wb") as out:
            size = copy_capped(src, out, max_bytes, digest)
    return dest, digest.hexdigest(), size


class _Nowhere:
    """A sink for bytes that are only hashed."""

    def write(self, data: bytes) -> int:
        return len(data)


def content_hash(source: Path, max_bytes: int) -> tuple[str, int]:
    """(sha256, bytes) of a report, read under the byte cap and copied nowhere: how intake
    learns which content a file holds (core/intake/arrivals.py)."""
    digest = hashlib.sha256()
    with _opened(source, max_bytes) as src:
        size = copy_capped(src, _Nowhere(), max_bytes, digest)  # type: ignore[arg-type]
    return digest.hexdigest(), size


@dataclass(frozen=True)
class Identified:
    """A report streamed into a private file, hashed, inspected and named."""

    path: Path  # the private copy, in the caller's workdir
    ref: RevisionRef
    size: int
    inspection: Inspection


def identify(
    source: Path, workdir: Path, source_name: str, month: str, settings: PipelineSettings,
    expected_hash: str = "",
) -> Identified:  # fmt: skip
    """The one way a report is identified, at intake and at staging: streamed into a private
    file under the byte cap and hashed once, refused as `changed` when its bytes are not the
    ones intake admitted (`expected_hash`), inspected, and named by its report id and revision
    (the idempotency key)."""
    path, digest, size = stage_stream(source, workdir, settings.limits.max_report_bytes)
    if expected_hash and digest != expected_hash:
        raise RefusedInput(
            "changed", "the report changed after intake; its new bytes get their own run"
        )
    checked = inspect_pdf(path, settings.limits)
    report_id = report_id_for(source_name, month)
    revision = revision_for(report_id, digest, settings.extractor_version)
    ref = RevisionRef(report_id, month, digest, settings.extractor_version, revision)
    return Identified(path, ref, size, checked)


def copy_capped(src: BinaryIO, out: BinaryIO, max_bytes: int, digest=None) -> int:
    """`storage.copy_capped` for a report: past the cap it is refused as too large."""
    try:
        return storage.copy_capped(src, out, max_bytes, digest)
    except storage.OverCap:
        raise RefusedInput("too_large", f"report is larger than {max_bytes} bytes") from None


def inspect_pdf(path: Path, limits: Limits) -> Inspection:
    """Check a staged report and return its page count, or refuse it with a clear reason.

    Whatever MuPDF raises while the report is looked at becomes a refusal, never a traceback.
    """
    with open(path, "rb") as handle:
        offset = handle.read(SIGNATURE_WINDOW).find(b"%PDF-")
    if offset < 0:
        raise RefusedInput("not_pdf", f"no %PDF- signature within the first "
                           f"{SIGNATURE_WINDOW:,} bytes")  # fmt: skip
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception:  # MuPDF raises several types for files it cannot open, even repaired
        raise RefusedInput("damaged", "PDF cannot be opened, even by repairing it") from None
    with doc:
        try:
            inspection = _inspect(doc, limits)
        except RefusedInput:
            raise
        except Exception as error:
            raise RefusedInput(
                INSPECTION_FAILED, f"PDF could not be inspected ({type(error).__name__})"
            ) from None
    if inspection.pages == 0:
        raise RefusedInput("empty", "PDF has no pages")
    if inspection.pages > limits.max_pages:
        raise RefusedInput(
            "too_many_pages", f"PDF has {inspection.pages} pages; the limit is {limits.max_pages}"
        )
    return replace(inspection, facts=replace(inspection.facts, signature_offset=offset))


PERMISSIONS = {  # what an encrypted PDF's /P grants, by name
    "print": pymupdf.PDF_PERM_PRINT, "modify": pymupdf.PDF_PERM_MODIFY,
    "copy": pymupdf.PDF_PERM_COPY, "annotate": pymupdf.PDF_PERM_ANNOTATE,
    "form": pymupdf.PDF_PERM_FORM, "accessibility": pymupdf.PDF_PERM_ACCESSIBILITY,
    "assemble": pymupdf.PDF_PERM_ASSEMBLE, "print_hq": pymupdf.PDF_PERM_PRINT_HQ,
}  # fmt: skip


def encryption(doc: pymupdf.Document) -> tuple[bool, tuple[str, ...]]:
    """(encrypted, the permissions it grants) of a PDF that opens without a password, as
    every viewer opens one encrypted with an empty user password; one that needs a password is
    refused. MuPDF opens the first kind silently (`is_encrypted` is False): the trailer's
    /Encrypt tells."""
    if doc.needs_pass and not doc.authenticate(""):
        raise RefusedInput("encrypted", "PDF is encrypted; submit an unencrypted copy")
    if doc.xref_get_key(-1, "Encrypt")[0] == "null" and not doc.is_encrypted:
        return False, ()
    return True, tuple(name for name, bit in PERMISSIONS.items() if doc.permissions & bit)


def _inspect(doc: pymupdf.Document, limits: Limits) -> Inspection:
    if not doc.is_pdf:
        raise RefusedInput("not_pdf", "file is not a PDF document")
    encrypted, permissions = encryption(doc)
    if encrypted and limits.refuse_encrypted:
        raise RefusedInput(
            "encrypted",
            "PDF is encrypted (it opens without a password, but refuse_encrypted is set); "
            "submit an unencrypted copy",
        )
    repaired = bool(doc.is_repaired)
    if repaired and limits.refuse_repaired:
        raise RefusedInput(
            "damaged", "PDF is damaged: it opens only by repairing its cross-reference table"
        )
    tree = counted_tree(doc)
    facts = SourceFacts(repaired, encrypted, permissions, tree.shared)
    return Inspection(tree.leaves, facts)


def counted_tree(doc: pymupdf.Document) -> page_tree.PageTree:
    """The page tree, when its leaves (a shared page once per reference) and MuPDF's count
    (from /Count) agree."""
    try:
        tree = page_tree.walk(doc)
    except page_tree.NoCatalog as lost:
        raise RefusedInput("damaged_xref", f"PDF cross-reference data is damaged: {lost}") from None
    except page_tree.BadPageTree as bad:
        raise RefusedInput("bad_page_tree", f"PDF page tree is malformed: {bad}") from None
    try:
        counted = doc.page_count
    except RuntimeError:  # MuPDF refuses a /Count beyond the number of objects
        counted = None
    if counted != tree.leaves:
        declared = tree.declared if counted is None else counted
        raise RefusedInput(
            "page_count_mismatch",
            f"PDF page tree holds {tree.leaves} pages but its /Count says {declared}",
        )
    return tree

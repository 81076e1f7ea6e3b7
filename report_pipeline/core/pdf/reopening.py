"""A document read page after page, in memory bounded by the page, not by the pages before it.

MuPDF keeps what it reads or makes for a document until the document is closed: every object it
parsed and, for a form that asks for it (/NeedAppearances), the appearance stream it makes for
each field it draws. A form of 300,000 fields, walked page after page, grew by ~5.6 KiB per field
and took the walk's child to 1,595 MiB of RSS, against its 1.5 GiB address-space limit.

`Reopening` closes and reopens the document between pages once the process has grown by
`budget` bytes since it opened it. Reopening costs an open (the cross-reference table is read
again: 0.07 s for 300,000 objects), and only a document that made the process grow pays it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

import pymupdf

from report_pipeline.core.pdf.pages import open_pdf

_PAGE = os.sysconf("SC_PAGE_SIZE")
# A confined child reopens its document once it has grown by this share of its memory allowance.
SHARE = 4


def resident_bytes() -> int:
    """The process's resident set now (0 where /proc cannot tell)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _give_back() -> None:
    """Return freed heap to the system (glibc), so the next pages start from a small process."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to give back
        ctypes.CDLL(None).malloc_trim(0)


class Reopening:
    """The document at `path`, reopened between pages past `budget` bytes of growth (0: never)."""

    def __init__(self, path: Path, budget: int) -> None:
        self.path, self.budget = path, budget
        self.doc: pymupdf.Document = open_pdf(path)
        self.base = resident_bytes()
        self.reopened = 0

    @classmethod
    def within(cls, path: Path, allowance: int) -> Reopening:
        """For a child that may add `allowance` bytes to what it had at the fork."""
        return cls(path, allowance // SHARE)

    def next_page(self) -> pymupdf.Document:
        """The document to read the next page from: reopened if the last pages grew the process
        past the budget."""
        if self.budget and resident_bytes() - self.base > self.budget:
            self.doc.close()
            _give_back()
            self.doc = open_pdf(self.path)
            self.base = resident_bytes()
            self.reopened += 1
        return self.doc

    def close(self) -> None:
        self.doc.close()

    def __enter__(self) -> Reopening:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

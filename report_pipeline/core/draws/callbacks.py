"""What MuPDF's content processor calls back into: guarded, and names read as MuPDF gives them.

An exception raised in a callback would cross MuPDF's C frames: SWIG prints a traceback (with
source paths) on stderr and the rest of the stream is silently lost. `guarded` turns it into a
stopped walk with a reason instead. A resource name with bytes that are not UTF-8 (`/Im#FF`)
arrives surrogate-escaped, and MuPDF's lookup by name refuses it: `entry` compares keys.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pymupdf import mupdf


def guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self, *args: Any) -> Any:
        try:
            return method(self, *args)
        except Exception as error:  # nothing may cross MuPDF's C frames
            self.stop("walk_failed", f"the walk met an unexpected {type(error).__name__}")
            return None

    return call


def entry(table: mupdf.PdfObj, name: str) -> mupdf.PdfObj | None:
    """`table`'s entry named `name` (None when there is none)."""
    if not table.m_internal:
        return None
    try:
        obj = mupdf.pdf_dict_gets(table, name)
    except (UnicodeError, TypeError):  # a name with bytes that are not UTF-8
        obj = None
        for i in range(mupdf.pdf_dict_len(table)):
            if mupdf.pdf_to_name(mupdf.pdf_dict_get_key(table, i)) == name:
                obj = mupdf.pdf_dict_get_val(table, i)
                break
    return obj if obj is not None and obj.m_internal else None

"""The worker's verdict on one image occurrence: plain data, no PDF stack behind it.

The extractor makes these; the archive side reads them back from `outcomes.json` without
importing PyMuPDF or Pillow.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ImageOutcome:
    page: int
    index: int
    state: str  # "validated", "quarantined" or "hidden" (not shown, not decoded)
    reason: str | None
    detail: str | None
    declared_type: str
    signature: str | None
    width: int
    height: int
    mode: str | None
    content_hash: str | None
    png_bytes: int
    stream_bytes: int
    started_at: str
    finished_at: str
    origin: str = "xobject"  # how the page draws it: xobject, inline, form/xobject, annotation/…
    xref: int = 0  # the image's PDF object number; 0 for an inline image
    # what the archived file leaves out of the source and why (an embedded ICC profile dropped
    # or not applied, core/validate/icc.py); "" when nothing
    notes: str = ""
    # why a viewer does not show it (optional_content_off, annotation_hidden:
    # core/pdf/visibility.py); "" when it is shown
    hidden: str = ""

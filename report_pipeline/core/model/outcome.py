"""The worker's verdict on one image occurrence: plain data, no PDF stack behind it.

The extractor makes these; the archive side reads them back from `outcomes.json` without
importing PyMuPDF or Pillow.
"""

from __future__ import annotations

from dataclasses import dataclass

# Every reason an image can be quarantined for: an ImageOutcome with another is a programming
# error, refused when it is made. docs/operate.md ("Quarantine reasons") lists the same, and
# report_pipeline_tests/core/test_doc_versions.py keeps the two equal (docs/develop.md: adding
# a reason). The last three come from a decoder that died, not from a check.
QUARANTINE_REASONS = (
    "stream_too_large", "signature_mismatch", "bad_dimensions", "bad_mask_reference",
    "pixel_cap_exceeded", "dimensions_exceed_cap", "dimension_mismatch", "truncated",
    "unsupported_precision", "colorspace_mismatch", "undecodable", "decoder_crashed",
    "memory_limit", "decode_timeout",
)  # fmt: skip


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
    # core/draws/visibility.py); "" when it is shown
    hidden: str = ""

    def __post_init__(self) -> None:
        if self.state == "quarantined" and self.reason not in QUARANTINE_REASONS:
            raise ValueError(f"{self.reason!r} is not a quarantine reason (QUARANTINE_REASONS)")

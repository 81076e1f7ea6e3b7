"""The one exception every image check raises (its own module so the parsers need no validation)."""

from __future__ import annotations

from report_pipeline.core.model.outcome import QUARANTINE_REASONS


class Quarantined(Exception):
    """Bad bytes: never retried, kept for review with a stable reason code."""

    def __init__(self, reason: str, detail: str) -> None:
        if reason not in QUARANTINE_REASONS:  # a programming error, not bad input
            raise ValueError(f"{reason!r} is not a quarantine reason (QUARANTINE_REASONS)")
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        # the image's stream as stored, when a check refused it after reading it (within the
        # stream cap): kept as evidence for review like a stream that failed to decode
        self.evidence: bytes | None = None

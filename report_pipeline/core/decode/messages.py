"""What the decoder pool and its children say to each other (sandbox/wire.py frames them).

Parent to child: a `Job` (a page, from which draw, which images not to try). Child to parent, per
draw: `Begin` before a decode, then `Image` (its outcome; the payload is the PNG or the evidence),
`Repeat` (the same image as an earlier draw of this child) or `Poisoned` (an image that killed a
decoder before); `Done` when the page is through. Each reply carries the child's CPU so far.
"""

from __future__ import annotations

from dataclasses import dataclass

from report_pipeline.core.model.outcome import ImageOutcome
from report_pipeline.core.sandbox.wire import message


@dataclass(frozen=True)
class Where:
    """One draw on a page, as the parent needs it to account for the draw if the child dies."""

    page: int
    index: int
    origin: str
    xref: int
    width: int
    height: int
    declared_type: str
    hidden: str
    defaults: str = ""  # the default colour spaces it is drawn under (draws/defaults.py spec)


@message("job")
class Job:
    page: int
    start: int  # the first draw to decode (a child that died left off before it)
    skip: list[list]  # [xref, reason, detail] of images that killed a decoder
    known: dict | None  # the page's draws as planned (pdf.pages.compact), or None: walk it


@message("begin")
class Begin:
    where: Where


@message("image")
class Image:
    where: Where
    outcome: ImageOutcome
    cpu: float


@message("repeat")
class Repeat:
    where: Where
    cpu: float


@message("poisoned")
class Poisoned:
    where: Where
    cpu: float


@message("done")
class Done:
    page: int
    cpu: float

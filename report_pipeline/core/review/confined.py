"""Decoding one piece of quarantine evidence in a confined child, as extraction decodes: the
same address-space and CPU limits (sandbox.child.confine), a wall-time limit, and the parent reads
nothing but a small JSON header and the PNG bytes the child sends (sandbox/).

The evidence is the image's stream as the PDF stored it. A JPEG, JPEG 2000 or any other
self-describing file decodes alone; a raw or Flate-encoded stream does not (its size and colour
space were in the PDF, which is gone), and is said so.
"""

from __future__ import annotations

import io
import selectors
import socket
import time
from dataclasses import asdict, dataclass

from report_pipeline.core.model.settings import DecodeSettings
from report_pipeline.core.sandbox import wire
from report_pipeline.core.sandbox.child import Child, Confinement, ended, spawn


@dataclass(frozen=True)
class Caps:
    """What the decode may reach: pixels and longest side (for a preview, also its size)."""

    max_pixels: int
    max_side: int
    preview_side: int = 0  # 0: the whole image; else scaled to fit this square


@wire.message("previewed")
class Previewed:
    """The child's answer; the PNG is the frame's payload."""

    ok: bool
    reason: str
    detail: str
    width: int = 0
    height: int = 0
    mode: str = ""
    sha256: str = ""


@dataclass(frozen=True)
class Result:
    ok: bool
    reason: str  # when not ok: pixel_cap_exceeded, dimensions_exceed_cap, undecodable, ...
    detail: str
    png: bytes = b""
    width: int = 0  # of the image as decoded (before any preview scaling)
    height: int = 0
    mode: str = ""
    sha256: str = ""


def decode(evidence: bytes, caps: Caps, settings: DecodeSettings, seconds: float) -> Result:
    """The evidence decoded in a confined child: its full image as PNG, or a preview."""

    def work(sock: socket.socket) -> None:
        wire.send(sock, *_decode_here(evidence, caps))

    child = spawn(work, Confinement(settings.memory_bytes, 60))
    try:
        return _collect(child, seconds)
    finally:
        child.sock.close()


def _collect(child: Child, seconds: float) -> Result:
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(child.sock, selectors.EVENT_READ)
        if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
            child.stop()
            return Result(False, "decode_timeout", f"no result within {seconds:.0f} s")
    try:
        answer, payload = wire.receive(child.sock)
    except (wire.ChildGone, ValueError):
        status, _ = child.reap()
        kind, said = ended(status)
        reason = {"memory": "memory_limit", "cpu": "decode_timeout"}.get(kind, "decoder_crashed")
        return Result(False, reason, f"the decoder {said}")
    child.reap()
    return Result(**asdict(answer), png=payload)


def _decode_here(evidence: bytes, caps: Caps) -> tuple[Previewed, bytes]:
    from PIL import Image  # in the child only: the parent never decodes evidence

    from report_pipeline.core.validate.normalize import encode_png, plain_mode

    def refused(reason: str, detail: str) -> tuple[Previewed, bytes]:
        return Previewed(ok=False, reason=reason, detail=detail), b""

    Image.MAX_IMAGE_PIXELS = caps.max_pixels
    try:
        image = Image.open(io.BytesIO(evidence))
        width, height = image.size
        if width * height > caps.max_pixels:
            return refused("pixel_cap_exceeded", f"{width}x{height}; ceiling {caps.max_pixels}")
        if max(width, height) > caps.max_side:
            return refused("dimensions_exceed_cap", f"{width}x{height}; ceiling {caps.max_side}")
        if caps.preview_side:
            image.draft("RGB", (caps.preview_side, caps.preview_side))  # JPEG: decode scaled
        image.load()
    except Image.DecompressionBombError as bomb:
        return refused("pixel_cap_exceeded", str(bomb))
    except (OSError, SyntaxError, ValueError) as bad:
        reason = "truncated" if "truncated" in str(bad).lower() else "undecodable"
        return refused(reason, f"the evidence does not decode on its own: {bad}")
    image = plain_mode(image) if image.mode not in {"L", "RGB", "RGBA", "LA"} else image
    if caps.preview_side:
        image.thumbnail((caps.preview_side, caps.preview_side))
    png = encode_png(image)
    answer = Previewed(ok=True, reason="", detail="", width=width, height=height, mode=png.mode,
                       sha256=png.sha256)  # fmt: skip
    return answer, png.png

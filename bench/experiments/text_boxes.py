"""`python -m bench.experiments.text_boxes [--rounds 5]`: what following text for the box a tiling
pattern paints it over (core/draws/textbox.py) costs the walk, paired in one process.

Three synthetic documents of 200 pages, each page 60 lines of 88 Helvetica glyphs (`Tm`, `Tc`,
`Tf`, `Tj` a line; about a million glyphs a document), whose resources hold a tiling pattern:
`plain` (text shown, nothing painted with the pattern), `one fill` (and one square filled with
it a page, the text then black), `patterned` (the text itself filled with it: every glyph laid
out). Each round walks each document twice,
with text followed as the walk does it and with it turned off (`drawn.paints_patterns` made to
say no, as before), in alternating order. Prints the CPU seconds of each, their medians, the
ratio (followed over off) and the load average.
"""

from __future__ import annotations

import argparse
import os
import time
from statistics import median

import pymupdf

from fixtures._objects import Objects, image, tiling_pattern
from report_pipeline.core.draws import drawn
from report_pipeline.core.pdf.pages import page_images

FOLLOWED = drawn.paints_patterns
LINE = b"BT /F 9 Tf 1 0 0 1 10 %d Tm 0.2 Tc (" + b"abcdefghij " * 8 + b") Tj ET\n"
KINDS = {"plain": b"", "one fill": b"/Pattern cs /P scn 0 0 5 5 re f 0 g\n",
         "patterned": b"/Pattern cs /P scn\n"}  # fmt: skip


def document(kind: str) -> bytes:
    o = Objects()
    pattern = o.add(tiling_pattern(o.add(image(40))))
    font = o.add(b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>")
    body = KINDS[kind] + b"".join(LINE % (10 + k % 180) for k in range(60))
    for _ in range(200):
        o.page(b"<</Pattern<</P %d 0 R>>/Font<</F %d 0 R>>>>" % (pattern, font), body, flate=True)
    return o.pdf()


def walk(data: bytes, followed: bool) -> float:
    drawn.paints_patterns = FOLLOWED if followed else (lambda page, seen: False)
    try:
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            started = time.process_time()
            for number in range(1, doc.page_count + 1):
                page_images(doc, number)
            return time.process_time() - started
    finally:
        drawn.paints_patterns = FOLLOWED


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    for kind in KINDS:
        data = document(kind)
        seconds: dict[bool, list[float]] = {True: [], False: []}
        for k in range(rounds):
            for followed in (True, False) if k % 2 else (False, True):
                seconds[followed].append(walk(data, followed))
        on, off = median(seconds[True]), median(seconds[False])
        print(f"{kind}: followed {on:.3f} s, off {off:.3f} s (medians of {rounds}), "
              f"{on / off:.2f}x; load {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()

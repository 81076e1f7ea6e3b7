"""A tiling pattern, soft mask or Type3 glyph runs once for each state that can change what it
draws; every later paint in that state replays what the run drew.

A pattern counts at each paint that uses it, a soft mask at each paint under it (`paints`), and
a glyph each time it is shown (`type3`). Running its content at every paint would make a map
that fills 30,000 paths with one hatch 30,000 stream runs, past the walk's limit
(`drawn.MAX_INVOCATIONS`), and a page of 100,000 characters 100,000. So the first run keeps its
draws (each image's origin below the stream, its object or inline image, why it is hidden), and
a later paint in the same state appends them again: a record per image, not a run. A pattern,
mask or glyph that draws no image costs a dictionary lookup.

The key is everything a run reads (`drawn.DrawFinder.run` gives it a graphics state of its own):
- the stream, its kind and the resources it runs with (its own, or the current ones), and
  those around it, where a name its own lack is found (`drawn.DrawFinder._lookup`);
- the paint it runs with: the other material's pattern, the text rendering mode (a glyph's is
  always fresh);
- the streams being run (`active`: one met again is a cycle, skipped; a pattern's damages the
  page) and the depth (`path`: the nesting limit);
- the visibility it starts in (marked content off, an XObject's /OC; optional content itself is
  the document's, the same all walk);
- the text state: the font it starts with (text without `Tf` uses it), the one a pattern
  selected inside it runs its cell's text in (`paints`: `text_base`), each pattern's, and the Type3
  fonts whose glyphs are being run (inside its own glyphs a font is a substitute: `type3`); for a
  soft mask, the spacing, scale, rise and size its text is laid out with (`textbox`).
What nests inside it (forms, patterns, glyphs) is part of the one run. A run is not kept, and
the next paint runs it again, counted, when it cannot stand for the next: a stream it ran made
MuPDF warn or raise, so `breaks` may judge it broken or repaired (`Streams.words`; a stream is
judged on its first run, so a page's verdicts are the same with or without replays), or it
stopped the walk or overflowed. Misses are runs like any other, so a file that changes the
state at every paint still meets the run limit; replayed records count against the page's and
the report's caps like any other (`pdf_pages`, `walk`).

A run also keeps how much deeper its graphics states went: replayed from deeper, MuPDF's renderer
would stop inside it (`drawn.GSTATE_TOP`), so it is run again instead, and breaks off there;
the same for its clips (`clips.CLIP_TOP`), and while clip text waits for its `ET`.
A mixin for `drawn.DrawFinder`, which provides `draws`, `limit`, `overflowed`, `path`, `active`,
`streams` (`breaks.Streams`), the graphics states' depth (`gtop`, `gpeak`, `gstate_top`,
`aborted`), the clips' (`clips`) and the state the key reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from pymupdf import mupdf

from report_pipeline.core.draws.clips import CLIP_TOP

REPLAYED = ("pattern", "softmask", "type3")  # the kinds of stream a paint or a show runs


@dataclass(frozen=True)
class Ran:
    """What one run drew, each origin below the stream that ran, and the state it left."""

    draws: tuple  # drawn.Draw, origin relative
    marked_off: int  # an unbalanced BDC or EMC inside carries out, as it did when run
    kept: tuple  # the objects the key names by address: they outlive the key
    # how much deeper than where it started the run's graphics states went (`drawn.GSTATE_TOP`):
    # from deeper, MuPDF's renderer would stop inside it, so it is run again, not replayed
    rise: int = 0
    crise: int = 0  # and its clips (`clips.CLIP_TOP`), likewise


class Replays:
    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.ran: dict[tuple, Ran] = {}

    def replay_key(self, kind: str, stream, resources, paint, font, base) -> tuple | None:
        """What decides what `stream` draws when run now (None: a kind never replayed)."""
        if kind not in REPLAYED:
            return None
        materials = tuple(
            (identity(s[0]), identity(s[1]), *(text(s[2]) if len(s) > 2 else ())) if s else None
            for s in (paint.fill, paint.stroke, paint.softmask)
        )
        around = tuple(identity(r) for r in self.resources[self.floor :])  # names fall back
        # a soft mask's group lays its text out in the text state it is painted in (`textbox`:
        # a pattern's cell and a glyph start from their own)
        laid_out = paint.text_params if kind == "softmask" else None
        return (kind, identity(stream), identity(resources), around, materials, paint.render,
                tuple(self.active), len(self.path), self.marked_off, tuple(self.hiding),
                identity(font[0]), font[1], text(base), tuple(self.fonts_running),
                self.colour.key if self.colour is not None else None, laid_out)  # fmt: skip

    def replayed(self, key: tuple | None) -> bool:
        """Append what the run for `key` drew, if one was kept, under the current origin."""
        ran = self.ran.get(key) if key is not None else None
        if ran is None or self.gtop + ran.rise > self.gstate_top:
            return False
        if self.clips + ran.crise > CLIP_TOP or self.clip_text:  # MuPDF would stop inside it
            return False
        prefix = "/".join(self.path)
        for draw in ran.draws:
            if len(self.draws) >= self.limit:
                self.overflowed()
                break
            origin = f"{prefix}/{draw.origin}" if prefix else draw.origin
            self.draws.append(replace(draw, origin=origin))
        self.marked_off = ran.marked_off
        return True

    @contextmanager
    def recorded(self, key: tuple | None, kept: tuple) -> Iterator[None]:
        """Run the body (the stream, from the state `key` names) and keep what it drew."""
        if key is None:
            yield
            return
        before = (len(self.draws), self.streams.words)
        cut = len("/".join(self.path)) + 1 if self.path else 0
        start, outer_peak, self.gpeak = self.gtop, self.gpeak, self.gtop
        cstart, outer_cpeak, self.cpeak = self.clips, self.cpeak, self.clips
        try:
            yield
        finally:
            rise, self.gpeak = self.gpeak - start, max(outer_peak, self.gpeak)
            crise, self.cpeak = self.cpeak - cstart, max(outer_cpeak, self.cpeak)
        if self.overflow or self.stopped or self.aborted or self.streams.words != before[1]:
            return
        draws = tuple(replace(d, origin=d.origin[cut:]) for d in self.draws[before[0] :])
        self.ran[key] = Ran(draws, self.marked_off, kept, rise, crise)


def text(state: tuple) -> tuple:
    """A text state (mode, font, a font is set) as a key."""
    return state[0], identity(state[1]), state[2]


def identity(obj: mupdf.PdfObj | None) -> int:
    """An object told apart from others: its number, or a direct one's address (negative)."""
    if obj is None or not obj.m_internal:
        return 0
    return mupdf.pdf_to_num(obj) or -mupdf.pdf_resolve_indirect(obj).m_internal_value()

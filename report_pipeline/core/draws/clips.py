"""MuPDF's renderer's clip nesting: where it stops drawing a page that clips too deep, or changes
the transformation while it gathers clip text.

MuPDF's run processor keeps at most 1,024 clips nested (pdf-op-run.c, `nest_layer_clip`): the
clip that would be the 1,025th raises "layer/clip nesting too deep", and the page draws nothing
more, its annotations neither. Measured with MuPDF's drawing device: a `W`/`W*` clips at the
path's paint (`n`, `f`, `S`, `B`, ..., with or without a path); text shown in a clip mode (Tr 4
to 7, a font set, a glyph shown) clips once at `ET`; a form or a soft mask's group clips to its
box (one more, for as long as it runs; an annotation's appearance is such a form); a pattern's
cell runs at the depth it is painted at; `Q` drops the clips made since its `q`; marked content
(layers, `BMC`, `EMC`) does not count. And once text is shown in a clip mode, any `cm` before
its `ET` (in the page, or in a form or pattern cell run meanwhile) raises "CTM CHANGE IN CLIP
TEXT": the page stops there too, once the text shown before it is painted. That holds from the
first glyph shown in a clip mode to the end of its `ET`, whose flush paints the text's patterns
first: a pattern cell or a soft mask's group with a `cm` that paints the text raises too
(crafted round 12). A Type3 glyph runs in a processor of its own, whose failure MuPDF's
renderer survives, so neither is followed there.

A mixin for `drawn.DrawFinder`, which provides `path`, `abort_page` and `paint`.
"""

from __future__ import annotations

from report_pipeline.core.draws.callbacks import guarded

CLIP_TOP = 1024
CLIP_LIMIT = "layer/clip nesting too deep"
CLIP_TEXT_CTM = "CTM CHANGE IN CLIP TEXT"
# the operators that paint a path, and so apply a pending `W`
_PAINTS = ("op_S", "op_s", "op_F", "op_f", "op_fstar", "op_B", "op_Bstar", "op_b", "op_bstar",
           "op_n")  # fmt: skip


class Clips:
    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.clips = 0  # how deep MuPDF's clips nest now (CLIP_TOP)
        self.cpeak = 0  # the deepest they went in the run being kept (`replays`)
        self.saved_clips: list[int] = []  # q/Q save and restore
        self.clipping = False  # a `W` waits for its path's paint
        self.clip_text = False  # text shown in a clip mode, its clip waiting for `ET`
        self.painting = False  # the path paints call back (after the first `W`)
        for op in ("op_W", "op_Wstar", "op_Tr"):
            getattr(self, f"use_virtual_{op}")()

    def reset_clips(self, saved: list[int]) -> None:
        """A processor of its own starts (the page's, an annotation's)."""
        self.clips = self.cpeak = 0
        self.saved_clips, self.clipping, self.clip_text = saved, False, False

    def _clip(self) -> None:
        """One more clip nests, as MuPDF's processor nests it."""
        if "type3" in self.path:
            return
        self.clips += 1
        self.cpeak = max(self.cpeak, self.clips)
        if self.clips > CLIP_TOP:
            self.abort_page(f"MuPDF stops drawing the page at it: {CLIP_LIMIT} (over "
                            f"{CLIP_TOP:,} clips)")  # fmt: skip

    @guarded
    def op_W(self, ctx) -> None:
        self.clipping = True
        if not self.painting:
            self.painting = True
            for op in _PAINTS:
                getattr(self, f"use_virtual_{op}")()

    op_Wstar = op_W

    def _paint_path(self) -> None:
        if self.clipping:
            self.clipping = False
            self._clip()

    # -- clip text ---------------------------------------------------------------------------
    @guarded
    def op_Tr(self, ctx, render) -> None:
        if 4 <= render <= 7:  # clip modes: what is shown, and its ET, call back
            self._follow_text()
            self.use_virtual_op_ET()
            self.use_virtual_op_cm()
        super().op_Tr(ctx, render)

    def _show(self, codes: bytes) -> None:
        if (
            codes
            and self.fonted
            and self.font is None
            and 4 <= self.paint.render <= 7
            and ("type3" not in self.path)
        ):  # a Type3 font's glyphs are run, not gathered as clip text
            super()._show(codes)  # text shown before in another mode is painted first
            self.clip_text = True
            return
        super()._show(codes)

    @guarded
    def op_ET(self, ctx, *args) -> None:
        super().op_ET(ctx, *args)  # the text's patterns paint while its clip text waits
        if self.clip_text:
            self.clip_text = False
            self._clip()

    @guarded
    def op_cm(self, ctx, a, b, c, d, e, f) -> None:
        if self.clip_text and "type3" not in self.path:
            self.flush_text()  # MuPDF paints the text shown before, then raises
            self.abort_page(f"MuPDF stops drawing the page at it: {CLIP_TEXT_CTM}")
            return
        super().op_cm(ctx, a, b, c, d, e, f)

    # -- graphics states ---------------------------------------------------------------------
    @guarded
    def op_q(self, ctx) -> None:
        self.saved_clips.append(self.clips)
        super().op_q(ctx)

    @guarded
    def op_Q(self, ctx) -> None:
        if self.saved_clips:  # at the base of a stream, MuPDF ignores an unbalanced Q
            self.clips = self.saved_clips.pop()
        super().op_Q(ctx)


def _applying_the_clip(name: str):
    """The path-painting operator `name`: it applies a pending `W` (`_paint_path`), then paints
    as the classes after Clips paint."""

    @guarded
    def op(self, ctx) -> None:
        self._paint_path()
        getattr(super(Clips, self), name)(ctx)

    op.__name__ = op.__qualname__ = name
    return op


for _name in _PAINTS:
    setattr(Clips, _name, _applying_the_clip(_name))

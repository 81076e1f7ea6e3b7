"""A tiling pattern or soft mask runs once per state it paints in, and later paints replay what
it drew (core/draws/replays.py): the records are those of running it at every paint, and the
walk's bounds hold."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import pymupdf
import pytest

from fixtures._replay_states import STATE_OPS, replay_states
from report_pipeline.core.draws import drawn
from report_pipeline.core.draws.replays import Replays
from report_pipeline.core.model.records import PageStreams

pytestmark = pytest.mark.slow


def walked(data: bytes, content: bytes):
    """The page's draws (origin, xref, why hidden) and broken streams, or the walk's refusal."""
    with pymupdf.open(stream=data, filetype="pdf") as doc:
        doc.update_stream(doc[0].get_contents()[0], content)
        try:
            draws, broken = drawn.page_draws(doc, 1, 10_000)
        except (drawn.WalkLimit, drawn.TooManyDraws) as refused:
            return str(refused)
    return [(d.origin, d.xref, d.hidden) for d in draws], broken


# Seeds 1 and 2 found no change to the replay key (each of its parts dropped in turn) that 0 and
# 3 did not: 0 and 3 find all five that 0-3 found, the rarest (the streams being run) 3 times.
@pytest.mark.parametrize("seed", [0, 3])
def test_replayed_draws_are_the_draws_of_running_the_stream_at_every_paint(seed, monkeypatch):
    """Random pages of patterns, soft masks, forms, text, layers and q/Q (fixtures/
    _replay_states.py), walked with replays and with every paint running its stream."""
    data, rng = replay_states(), random.Random(seed)
    contents = [b" ".join(rng.choices(STATE_OPS, k=rng.randint(5, 40))) for _ in range(150)]
    hits, real = [], Replays.replayed

    def replayed(self, key):
        hits.append(real(self, key))
        return hits[-1]

    monkeypatch.setattr(Replays, "replayed", replayed)
    with quiet_mupdf():  # damaged streams, on purpose
        replays = [walked(data, content) for content in contents]
        monkeypatch.setattr(Replays, "replay_key", lambda *args: None)
        assert [walked(data, content) for content in contents] == replays
    assert sum(hits) > 100  # paints that replayed


@pytest.mark.parametrize(
    "content",
    [b"/Pattern cs /PR scn /FR Do",  # the same form and depth, the resources differ
     b"/Pattern cs /PO scn 0 0 10 10 re f EMC 0 0 10 10 re f /Im Do",  # the layer it leaves on
     b""],  # the annotations: one appearance, the second flagged NoView
)  # fmt: skip
def test_a_state_that_changes_what_a_pattern_draws_is_run_again(content, monkeypatch):
    data = replay_states()
    with quiet_mupdf():
        replays = walked(data, content)
        monkeypatch.setattr(Replays, "replay_key", lambda *args: None)
        assert walked(data, content) == replays


def test_each_state_a_pattern_paints_in_is_a_run_counted_against_the_limit(monkeypatch):
    """60 paints with the hatch `H` (it draws no image) under a run limit of 50: in one state,
    one run; each inside one more marked-content block, 60 runs, and the walk is refused."""
    monkeypatch.setattr(drawn, "MAX_INVOCATIONS", 50)
    data, start = replay_states(), b"/Pattern cs /H scn /OC /L BDC "
    draws, broken = walked(data, start + b"0 0 10 10 re f " * 60)
    assert [d for d in draws if not d[0].startswith("annotation/")] == []
    assert broken == PageStreams()
    refused = walked(data, start + b"/X BMC 0 0 10 10 re f " * 60)
    assert refused.startswith("walk_limit_exceeded: it runs more than 50 ")


@contextmanager
def quiet_mupdf() -> Iterator[None]:
    shown = pymupdf.TOOLS.mupdf_display_errors()
    pymupdf.TOOLS.mupdf_display_errors(False)
    try:
        yield
    finally:
        pymupdf.TOOLS.mupdf_display_errors(shown)

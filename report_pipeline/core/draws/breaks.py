"""Which of a page's content streams broke off, and which MuPDF repaired.

A stream is broken only when its operators are cut off: MuPDF raised while reading it (a filter
that fails: "zlib error", "read error") or interpreting it, gave up on it after too many syntax
errors, or its content ends inside an operator, a string or an inline image
(`operators.cut_off`). What it would have drawn after the break is unknown.

A part of a page's /Contents that is no stream (a dictionary, null, a missing object), or a
/Contents that is none, is no broken stream: MuPDF skips it and draws the rest.

A stream whose data ends early or fails its checksum (a Flate stream cut after its last
operator, or without its adler32: MuPDF says "premature end of data" or "ignoring zlib error"
and goes on) is whole when its operators parse to the end: MuPDF draws all of it. Its page
counts it as `repaired`. MuPDF's warnings about anything else it reads while walking a page (a
font's stream, an inline image's data) say nothing about the page's operators.

The walk tells `Streams` when each content stream starts and ends running; MuPDF's warnings are
read at each boundary, so each is charged to the stream that was running. Only a stream that
drew warnings (or raised) is read again, alone, and judged, after the page's walk.

A stream nested deeper than the walk follows (`drawn.MAX_NESTING`: a form, pattern, soft mask
or glyph inside 24 others) is not run (`stream_too_deep`): MuPDF's renderer draws deeper (about
60 forms or patterns deep, where its exception stack runs out and the whole page fails), so what
it draws is unknown and its page is damaged like one whose stream broke off. The walk goes on
after it, as after a broken stream; it is said once per stream object on a page. So is a
pattern painted inside its own cell in a soft mask's group or a Type3 glyph (`cycle`): MuPDF's
renderer nests it until its exception stack runs out, and they catch the error (elsewhere it
raises out of the page: `drawn.DrawFinder.pattern_cycle`); the walk does not run it again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pymupdf
from pymupdf import mupdf

from report_pipeline.core.draws.operators import cut_off
from report_pipeline.core.model.records import Break, PageStreams

UNREADABLE, CUT_OFF, UNLOADABLE = "stream_unreadable", "stream_cut_off", "page_unloadable"
TOO_DEEP = "stream_too_deep"
_SHORT = ("premature end of", "ignoring zlib error")  # MuPDF went on with what it had
_FAILED = "read error"  # a filter raised: MuPDF treats the stream as ending there
MAX_BREAKS = 20  # what broke off, said for the first few streams of a page (all are counted)


@dataclass
class _Run:
    label: str
    streams: list[mupdf.PdfObj]
    drawn: int
    said: str
    raised: str
    found: Break | None = None  # judged when it was met (`too_deep`), not by reading it


@dataclass
class Streams:
    """One page's content-stream runs, as the walk reports them (`enter`, `leave`)."""

    said: list[list[str]] = field(default_factory=list)  # warnings of each stream running
    seen: set[tuple[int, ...]] = field(default_factory=set)
    runs: list[_Run] = field(default_factory=list)  # the first run of each stream that drew a word
    # runs that drew a word (a warning or an error), each one, judged or not: such a run may be
    # broken or repaired, so it stands for no other (`replays`)
    words: int = 0
    deep: set[int] = field(default_factory=set)  # streams not run for their depth (`too_deep`)

    def enter(self) -> None:
        """A stream starts running: what MuPDF said until now belongs to the one around it."""
        self._charge()
        self.said.append([])

    def leave(self, label: str, streams: list[mupdf.PdfObj], drawn: int, raised: str = "") -> None:
        """The stream (`streams`: one, or a page's /Contents array) ran; the page had drawn
        `drawn` images by its end; `raised`: the error MuPDF raised out of it."""
        self._charge()
        said = "\n".join(self.said.pop()) if self.said else ""
        self.words += bool(said or raised)
        key = tuple(mupdf.pdf_to_num(stream) for stream in streams)
        if key and all(key) and key in self.seen:
            return  # judged on its first run: a form drawn again reads the same bytes
        self.seen.add(key)
        if said or raised:
            self.runs.append(_Run(label, streams, drawn, said, raised))

    def too_deep(
        self, number: int, path: list[str], kind: str, stream: mupdf.PdfObj, drawn: int
    ) -> None:
        """`stream` (object `number`, a `kind` inside `path`) was not run, nested deeper than
        the walk follows: what it draws is unknown. Said once per stream object, at the cost of
        a set lookup after that; the page had drawn `drawn` images when it was first met."""
        if number in self.deep:
            return
        self.deep.add(number)
        where = f"{label([path[0], '...', kind], [stream])}, {len(path) + 1} deep"
        what = (f"it is nested deeper than {len(path)} forms, patterns or glyphs: the walk "
                "does not follow it, so what it draws is unknown")  # fmt: skip
        self.runs.append(_Run(where, [stream], drawn, "", "", Break(TOO_DEEP, where, what, drawn)))

    def cycle(self, number: int, path: list[str], stream: mupdf.PdfObj, drawn: int) -> None:
        """Pattern `stream` (object `number`) is painted inside its own cell, `path` deep: MuPDF's
        renderer runs it again and again until its exception stack runs out and the whole page
        fails, so what the page shows is unknown; the walk does not run it again. Said once per
        pattern object on a page, like a stream too deep."""
        if number in self.deep:
            return
        self.deep.add(number)
        where = f"{label([path[0], '...', 'pattern'], [stream])}, {len(path) + 1} deep"
        what = (
            "a pattern painted inside its own cell: MuPDF's renderer paints it again until "
            "its exception stack runs out and the page fails, so what it draws is unknown"
        )
        self.runs.append(_Run(where, [stream], drawn, "", "", Break(TOO_DEEP, where, what, drawn)))

    def broken_here(
        self, where: str, streams: list[mupdf.PdfObj], reason: str, what: str, drawn: int
    ) -> None:
        """A stream breaks off where the walk met it (MuPDF's renderer would raise there: a
        limit of its own the walk keeps, `drawn.GSTATE_TOP`), having drawn `drawn` images."""
        self.runs.append(_Run(where, streams, drawn, "", "", Break(reason, where, what, drawn)))

    def _charge(self) -> None:
        said = pymupdf.TOOLS.mupdf_warnings()  # and forget them
        if said and self.said:
            self.said[-1].append(said)

    def verdicts(self) -> PageStreams:
        """Every stream that drew a word, judged (after the page's walk: this reads them)."""
        broken: list[tuple[Break, list[mupdf.PdfObj]]] = []
        repaired = 0
        for run in self.runs:
            found = judge(run)
            if isinstance(found, Break):
                broken.append((found, run.streams))
            else:
                repaired += found
        if not broken:
            return PageStreams(repaired=repaired)
        digest = hashlib.sha256()
        for _, streams in broken:
            for stream in streams:
                digest.update(raw_bytes(stream))
        breaks = tuple(b for b, _ in broken[:MAX_BREAKS])
        return PageStreams(len(broken), breaks, digest.hexdigest(), repaired)


def judge(run: _Run) -> Break | int:
    """The run's stream broken (a Break), or whole: 1 when MuPDF repaired it, else 0."""
    if run.found is not None:
        return run.found
    if run.raised:
        return Break(UNREADABLE, run.label, f"MuPDF stopped interpreting it: {run.raised}",
                     run.drawn)  # fmt: skip
    if "ignoring rest of" in run.said:
        return Break(UNREADABLE, run.label, "MuPDF gave up on it after too many syntax errors",
                     run.drawn)  # fmt: skip
    # a part that is no stream (a dictionary, a number, null, a missing object, an array) MuPDF
    # skips ("cannot load content stream part"), as it runs a /Contents that is none as empty:
    # nothing of it is lost
    read = [_read(stream) for stream in run.streams if mupdf.pdf_is_stream(stream)]
    for _, ended in read:
        if ended not in ("", "short"):
            return Break(UNREADABLE, run.label, f"MuPDF could not read it to its end ({ended})",
                         run.drawn)  # fmt: skip
    # a page's /Contents array is one content stream, its parts joined by a space as MuPDF
    # joins them; a part whose data ended early must end on a whole operator
    for n, (_, ended) in enumerate(read):
        if ended == "short":
            cut = cut_off(b" ".join(data for data, _ in read[: n + 1]), short=True)
            if cut:
                return Break(CUT_OFF, run.label, f"its data ends early, {cut}", run.drawn)
    cut = cut_off(b" ".join(data for data, _ in read))
    if cut:
        return Break(CUT_OFF, run.label, f"it ends {cut}", run.drawn)
    return sum(ended == "short" for _, ended in read)


def _read(stream: mupdf.PdfObj) -> tuple[bytes, str]:
    """The stream's data as MuPDF decodes it, and how its filters ended: "" in full, "short"
    (MuPDF said it ended early or failed its checksum, and went on), else the error that
    stopped it. A failed allocation raises: the walk's memory limit, not a broken stream."""
    pymupdf.TOOLS.mupdf_warnings()
    try:
        data = mupdf.pdf_load_stream(stream).fz_buffer_extract()
    except mupdf.FzErrorBase as error:
        if any(word in str(error).lower() for word in ("malloc", "out of memory")):
            raise
        return b"", plain(str(error))
    said = pymupdf.TOOLS.mupdf_warnings().lower().splitlines()
    if any(_FAILED in line for line in said):
        errors = [line for line in said if _FAILED not in line]
        return data, plain(errors[0] if errors else _FAILED)
    if any(word in line for line in said for word in _SHORT):
        return data, "short"
    return data, ""


def plain(message: str) -> str:
    """MuPDF's message without its class ("library error: zlib error: …" -> "zlib error: …")."""
    for prefix in ("library error: ", "format error: ", "syntax error: ", "generic error: "):
        message = message.removeprefix(prefix)
    return message.strip()[:200]


def raw_bytes(stream: mupdf.PdfObj) -> bytes:
    """The stream's bytes as the PDF holds them (before its filters)."""
    try:
        return mupdf.pdf_load_raw_stream(stream).fz_buffer_extract()
    except mupdf.FzErrorBase:
        return b""


def parts(contents: mupdf.PdfObj) -> list[mupdf.PdfObj]:
    """A page's /Contents: its one stream, or each stream of its array."""
    if mupdf.pdf_is_array(contents):
        return [mupdf.pdf_array_get(contents, i) for i in range(mupdf.pdf_array_len(contents))]
    return [contents]


def label(path: list[str], streams: list[mupdf.PdfObj]) -> str:
    """How a reader finds the stream: "page content (object 7)", "annotation/form (object 9)"."""
    numbers = [mupdf.pdf_to_num(stream) for stream in streams]
    objects = "object" if len(numbers) == 1 else "objects"
    where = f" ({objects} {', '.join(map(str, numbers))})" if any(numbers) else ""
    return ("/".join(path) or "page content") + where


def unloadable(doc, number: int, error: Exception) -> PageStreams:
    """A page MuPDF cannot load draws nothing: it is damaged, named by its dictionary's bytes."""
    try:
        source = doc.xref_object(doc.page_xref(number - 1), compressed=True).encode()
    except Exception:  # the page's object cannot be read either
        source = b""
    what = f"MuPDF cannot load the page ({plain(str(error))})"
    found = Break(UNLOADABLE, "page", what, 0)
    return PageStreams(1, (found,), hashlib.sha256(source).hexdigest())


def to_wire(streams: PageStreams) -> dict | None:
    """A page's stream verdicts for the parent (None: every stream whole, none repaired)."""
    if not streams.broken and not streams.repaired:
        return None
    return {"broken": streams.broken, "evidence": streams.evidence,
            "repaired": streams.repaired,
            "breaks": [[b.reason, b.stream, b.what, b.drawn] for b in streams.breaks]}  # fmt: skip


def from_wire(message: dict) -> PageStreams:
    """`to_wire`'s inverse; a malformed message raises (ValueError, TypeError, ...)."""
    found = tuple(Break(str(r), str(s), str(w), int(d)) for r, s, w, d in message["breaks"])
    return PageStreams(int(message["broken"]), found[: MAX_BREAKS],
                       str(message["evidence"]), int(message["repaired"]))  # fmt: skip

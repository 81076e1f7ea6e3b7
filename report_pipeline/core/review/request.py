"""What a review decision may say: the month, the decision word, the reviewer's name and the
note, checked before anything is read. Names are people's names in any script; names and notes
end up in manifests, audit events and terminals, so neither may hold a character that is
invisible or moves text."""

from __future__ import annotations

import re
import unicodedata

from report_pipeline.core.model.settings import ReviewSettings
from report_pipeline.core.review.queue import ReviewError

MONTH = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])\Z")  # as intake checks one (ASCII digits)
DECISIONS = {"accept": "accepted", "reject": "rejected"}
NAME_CHARS = 64
NAME_RULE = (
    "a name without spaces: a letter (any script), then up to 63 letters, digits, '.', '_' or '-'"
)
# What a note may not hold, by Unicode category: what would break its line, hide in it, or
# reorder how the rest of it reads (U+202E). The joiners U+200C/U+200D stay: Persian, the Indic
# scripts and emoji need them, and they move nothing.
REFUSED_IN_NOTES = {
    "Cc": "control character",
    "Cf": "invisible format character",
    "Zl": "line separator",
    "Zp": "paragraph separator",
    "Cs": "unpaired surrogate",
}
JOINERS = {"\u200c", "\u200d"}


def check_request(
    month: str, decision: str, reviewer: str, note: str, settings: ReviewSettings
) -> str:
    """The reviewer's name as it is recorded (NFC), or ReviewError `bad_input`."""
    if not MONTH.match(month):
        raise ReviewError("bad_input", f"month must look like YYYY-MM, got {month!r}")
    if decision not in DECISIONS:
        raise ReviewError("bad_input", f"decision {decision!r} is not accept or reject")
    name = reviewer_name(reviewer)
    check_note(note, settings)
    return name


def reviewer_name(reviewer: str) -> str:
    """`reviewer` NFC-normalized, when it is a letter, then up to 63 letters (with their
    combining marks), digits, '.', '_' or '-'."""
    name = unicodedata.normalize("NFC", reviewer)
    if not name or len(name) > NAME_CHARS or not name[0].isalpha():
        raise ReviewError("bad_input", f"reviewer must be {NAME_RULE}")
    if not all(_name_char(c) for c in name[1:]):
        raise ReviewError("bad_input", f"reviewer must be {NAME_RULE}")
    return name


def _name_char(c: str) -> bool:
    # marks (Mn, Mc) after a letter: written with it in Devanagari, Thai, Tamil, ...
    return c.isalpha() or c.isdecimal() or c in "._-" or unicodedata.category(c) in ("Mn", "Mc")


def check_note(note: str, settings: ReviewSettings) -> None:
    """At most `note_chars` characters, one line of visible text."""
    if len(note) > settings.note_chars:
        raise ReviewError("bad_input", f"note is {len(note)} characters; at most "
                          f"{settings.note_chars}")  # fmt: skip
    for position, c in enumerate(note, 1):
        kind = REFUSED_IN_NOTES.get(unicodedata.category(c))
        if kind and c not in JOINERS:
            raise ReviewError("bad_input", f"note has a {kind} (U+{ord(c):04X}) at character "
                              f"{position}: a note is one line of visible text")  # fmt: skip

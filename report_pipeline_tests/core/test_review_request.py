"""What a review decision may say (core/review/request.py): reviewer names in any script, notes
of one visible line, a month and a decision word, all checked before anything is read."""

from __future__ import annotations

import unicodedata

import pytest

from report_pipeline.core.model.settings import ReviewSettings
from report_pipeline.core.review.queue import ReviewError
from report_pipeline.core.review.request import check_note, check_request, reviewer_name


@pytest.mark.parametrize(
    "name", ["ana.lopez", "josé", "Zoë.Ng", "李雷", "Ольга_2", "अनिल", "สมศักดิ์", "o-b", "x" * 64]
)
def test_a_name_in_any_script_is_accepted_as_written(name):
    assert reviewer_name(name) == name


def test_a_name_is_recorded_in_its_composed_form():
    decomposed = "jose\u0301"  # e + combining acute, as some keyboards and macOS paths send it
    assert reviewer_name(decomposed) == "josé" == unicodedata.normalize("NFC", decomposed)


@pytest.mark.parametrize(
    "name",
    ["", "ana lopez", "1ana", ".ana", "../etc", "ana\n", "ana\t", "jo\u202ese", "ana\u200b",
     "ana\x1b[31m", "ana\u00a0b", "x" * 65, "\u0301ana"],
)  # fmt: skip
def test_a_name_with_spaces_controls_or_no_leading_letter_is_refused(name):
    with pytest.raises(ReviewError) as bad:
        reviewer_name(name)
    assert bad.value.code == "bad_input" and "a letter (any script)" in bad.value.message


@pytest.mark.parametrize(
    ("note", "kind", "position"),
    [("seen\nok", "control character (U+000A)", 5), ("\rx", "control character (U+000D)", 1),
     ("a\tb", "control character (U+0009)", 2), ("red \x1b[31m", "control character (U+001B)", 5),
     ("nul\x00", "control character (U+0000)", 4),
     ("ok \u202egnp.exe", "invisible format character (U+202E)", 4),
     ("one\u2028two", "line separator (U+2028)", 4)],
)  # fmt: skip
def test_a_note_with_a_control_or_format_character_says_which_and_where(note, kind, position):
    with pytest.raises(ReviewError) as bad:
        check_note(note, ReviewSettings())
    assert bad.value.code == "bad_input"
    assert bad.value.message == (f"note has a {kind} at character {position}: a note is one line "
                                 "of visible text")  # fmt: skip


def test_a_note_of_ordinary_text_in_any_script_passes_up_to_its_length_limit():
    for note in ("PNG bytes, fine", "نامه می\u200cخواهم", "ok 👩\u200d💻", "é" * 500):
        check_note(note, ReviewSettings())
    with pytest.raises(ReviewError) as long:
        check_note("é" * 501, ReviewSettings())
    assert long.value.message == "note is 501 characters; at most 500"


@pytest.mark.parametrize(
    ("month", "decision"),
    [("2026-1", "reject"), ("２０２６-10", "reject"), ("2026-13", "reject"), ("2026-10", "maybe")],
)
def test_a_bad_month_or_decision_word_is_refused_as_bad_input(month, decision):
    with pytest.raises(ReviewError) as bad:
        check_request(month, decision, "ana", "", ReviewSettings())
    assert bad.value.code == "bad_input"

"""Words in messages read by people: counts ("1 page", "2 pages", never "1 pages" or
"page(s)"), and what MuPDF said when it raised."""

import re


def plural(count: int, singular: str, plural_form: str = "") -> str:
    """`count` and the noun, singular for exactly one: plural(1, "page") == "1 page"."""
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


# MuPDF messages that quote a name from the file ("unknown colorspace: <name>"): the name is the
# file's bytes (up to 127 of the publisher's choosing), so a message says only that it was one
_ECHOED_NAME = re.compile(r"\b(unknown colorspace):? \S+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def said(error: Exception, limit: int = 200) -> str:
    """What MuPDF said when it raised ("Failed to read JPX header", without its error code),
    at most `limit` characters, or the exception's kind when it said nothing; a name it quotes
    from the file is left out, and a control character is a `?`."""
    text = re.sub(r"^code=\d+: ", "", str(error)).strip()
    text = _CONTROL.sub("?", _ECHOED_NAME.sub(r"\1 (a name in the file)", text))
    return text[:limit] or type(error).__name__

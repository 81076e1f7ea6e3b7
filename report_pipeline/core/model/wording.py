"""Words in messages read by people: counts ("1 page", "2 pages", never "1 pages" or
"page(s)"), and what MuPDF said when it raised."""

import re


def plural(count: int, singular: str, plural_form: str = "") -> str:
    """`count` and the noun, singular for exactly one: plural(1, "page") == "1 page"."""
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def said(error: Exception, limit: int = 200) -> str:
    """What MuPDF said when it raised ("Failed to read JPX header", without its error code),
    at most `limit` characters, or the exception's kind when it said nothing."""
    return re.sub(r"^code=\d+: ", "", str(error)).strip()[:limit] or type(error).__name__

"""Counts in messages read by people: "1 page", "2 pages", never "1 pages" or "page(s)"."""


def plural(count: int, singular: str, plural_form: str = "") -> str:
    """`count` and the noun, singular for exactly one: plural(1, "page") == "1 page"."""
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"

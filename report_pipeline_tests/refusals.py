"""The fixtures intake refuses whole, with the refusal code each one gets: written once, for
every tier that checks them (core intake, the pipeline, the oracle, the CLI)."""

UNUSABLE = {
    "encrypted.pdf": "encrypted",
    "not_a_pdf.pdf": "not_pdf",
    "truncated_pdf.pdf": "bad_page_tree",
    "count_too_small.pdf": "page_count_mismatch",
    "count_too_large.pdf": "page_count_mismatch",
}

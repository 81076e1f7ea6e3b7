"""A month's revisions as listed from the archive (`months.revisions`): the report ids a caller
names as likely (its own) are listed beside the archive's own listing, and the answer is the
same as without them, on both stores."""

from __future__ import annotations

from report_pipeline.core.archive.months import revisions
from report_pipeline.core.model import keys

MONTH = "2026-10"


def test_naming_the_callers_report_changes_nothing_in_the_answer(any_store):
    for report_id, revision in [
        (f"inbox-{MONTH}", "r1"), (f"inbox-{MONTH}", "r2"), (f"teams-{MONTH}", "r3"),
        ("inbox-2026-09", "r4"),
    ]:  # fmt: skip
        any_store.put_bytes(keys.manifest_key(report_id, revision), b"{}")
    plain = revisions(any_store, MONTH)
    assert sorted(plain) == [(f"inbox-{MONTH}", "r1"), (f"inbox-{MONTH}", "r2"),
                             (f"teams-{MONTH}", "r3")]  # fmt: skip
    assert revisions(any_store, MONTH, (f"inbox-{MONTH}",)) == plain
    assert revisions(any_store, MONTH, (f"teams-{MONTH}", f"inbox-{MONTH}")) == plain
    # a report the archive does not hold (a month's first look), or of another month
    assert revisions(any_store, MONTH, (f"absent-{MONTH}", "inbox-2026-09")) == plain
    assert revisions(any_store, None, (f"inbox-{MONTH}",)) == revisions(any_store)

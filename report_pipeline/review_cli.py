"""`report-pipeline quarantine list|show|decide`: the quarantine review from a shell, on the
deployment's store (the local store, or S3 with REPORT_PIPELINE_DEPLOYMENT=production): each
quarantined image, and each damaged page (`--page`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

EXIT_CODES = {  # ReviewError code -> exit code
    "unknown_month": 30, "unknown_sequence": 31, "not_quarantined": 31, "unknown_page": 31,
    "already_decided": 32,
    "cannot_accept": 33, "revision_changed": 34, "bad_input": 35,
}  # fmt: skip
EXIT_TRANSIENT, EXIT_PERMANENT, EXIT_ACCEPT_FAILED = 36, 38, 37  # 5: cli.EXIT_ERROR
EPILOG = """exit codes:
  0   done (decide: recorded, or the same decision was already recorded)
  30  nothing is archived for the month
  31  the month's archived revision has no such quarantined image (or damaged page)
  32  the image is already decided the other way (a contrary decision is refused)
  33  accept is refused: its reason is not a check that can be lifted (reject it)
  34  the month's revision changed since it was listed: list again
  35  bad input: reviewer not a name (a letter, then letters, digits, '.', '_', '-'; any
      script, no spaces), note too long or not one line of visible text, output folder
      not empty or not makeable
  36  the store is unreachable for now (transient): retry; nothing was changed
  37  accept: the image still fails under the lifted check (it stays quarantined)
  38  the store refused the request (permanent): check its configuration
  5   an unexpected error (one line on stderr, no traceback)
  2   usage error

Review the quarantine: docs/review.md."""


def add_commands(commands: argparse._SubParsersAction, month: Callable[[str], str]) -> None:
    review = commands.add_parser(
        "quarantine", help="review quarantined images: list, show, decide", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    verbs = review.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser(
        "list", help="undecided quarantined images, per object, and undecided damaged pages"
    )
    listing.add_argument("month", nargs="?", type=month, help="one month (default: every month)")
    listing.add_argument("--json", action="store_true", help="one JSON array on stdout")
    show = verbs.add_parser("show", help="write an item's evidence and a safe preview")
    show.add_argument("month", type=month)
    show.add_argument("sequence", type=int)
    show.add_argument("--out", type=Path, required=True, help="a new or empty folder (0700)")
    show.add_argument("--json", action="store_true")
    decide = verbs.add_parser("decide", help="accept or reject an item: a new month revision")
    decide.add_argument("month", type=month)
    decide.add_argument("sequence", type=int, nargs="?", help="the image (or give --page)")
    decide.add_argument("decision", choices=["accept", "reject"])
    decide.add_argument("--page", type=int, help="a damaged page: accept it as it is, or reject")
    decide.add_argument("--reviewer", required=True, help="who decides: a name, no spaces")
    decide.add_argument("--note", default="", help="why: one line, at most 500 characters")
    decide.add_argument("--revision", default="", help="the revision listed (refused if changed)")
    decide.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    import dagster as dg

    from report_pipeline.core.review.queue import ReviewError
    from report_pipeline.core.storage.store import PermanentStorageError, TransientStorageError
    from report_pipeline.defs.deployment.deployment import deployment, resources_for

    resources = resources_for(deployment())
    try:
        with dg.build_resources({k: resources[k] for k in ("store", "settings")}) as built:
            store, settings = built.store.get_store(), built.settings.settings()
            return {"list": _list, "show": _show, "decide": _decide}[args.verb](
                args, store, settings
            )
    except ReviewError as refused:
        return _say(args, EXIT_CODES[refused.code], f"refused ({refused.code}): {refused.message}")
    except TransientStorageError:
        return _say(args, EXIT_TRANSIENT, "the store is unreachable for now: retry")
    except PermanentStorageError:
        return _say(args, EXIT_PERMANENT, "the store refused the request: check its configuration")


def _list(args, store, settings) -> int:
    from report_pipeline.core.review.pages import pending_pages
    from report_pipeline.core.review.queue import archived_months, pending

    months = [args.month] if args.month else archived_months(store)
    items, damaged = pending(store, months), pending_pages(store, months)
    if args.json:
        listed = [{"kind": "image", **i.as_json()} for i in items]
        print(json.dumps(listed + [p.as_json() for p in damaged], indent=1))
        return 0
    for i in items:
        pages = ",".join(map(str, i.pages))
        print(f"{i.month}  seq {i.sequence:<5} pages {pages:<9} {i.origin:<14} {i.reason:<22} "
              f"{i.declared_type:<6} {i.width}x{i.height} {i.stream_bytes} B  "
              f"revision {i.revision}  evidence {i.evidence_key or '-'}\n"
              f"    {i.detail}")  # fmt: skip
    for p in damaged:
        print(f"{p.month}  page {p.page:<5} damaged ({p.broken_streams} stream(s) broke off) "
              f"{p.reason:<22} revision {p.revision}  evidence sha256 {p.evidence[:16]}\n"
              f"    {p.detail}\n    {p.drawn_text}")  # fmt: skip
    print(f"{len(items)} undecided" + (f", {len(damaged)} damaged page(s) undecided" if damaged
          else ""), file=sys.stderr)  # fmt: skip
    return 0


def _show(args, store, settings) -> int:
    from report_pipeline.core.review.show import show

    shown = show(store, args.month, args.sequence, args.out, settings.review, settings.decode)
    result = {"evidence": str(shown.evidence or ""), "preview": str(shown.preview or ""),
              "no_preview": shown.no_preview, **shown.item.as_json()}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"evidence {result['evidence'] or '-'}\npreview  {result['preview'] or '-'}"
              + (f"  (no preview: {shown.no_preview})" if shown.no_preview else ""))  # fmt: skip
    return 0


def _decide(args, store, settings) -> int:
    from report_pipeline.core.model.clock import utc_now
    from report_pipeline.core.review.decide import decide
    from report_pipeline.core.review.pages import decide_page
    from report_pipeline.core.review.queue import ReviewError

    if (args.sequence is None) == (args.page is None):
        raise ReviewError("bad_input", "name one item: an image's sequence, or --page N")
    if args.page is not None:
        done = decide_page(store, args.month, args.page, args.decision, args.reviewer, args.note,
                           utc_now(), settings.review, args.revision)  # fmt: skip
    else:
        done = decide(
            store, args.month, args.sequence, args.decision, args.reviewer, args.note,
            utc_now(), settings.review, settings.decode, args.revision,
        )  # fmt: skip
    said = {"decision": done.decision, "changed": done.changed, "revision": done.revision,
            "previous_revision": done.previous_revision, "reason": done.reason}  # fmt: skip
    if args.json:
        print(json.dumps(said))
    elif not done.changed:
        print(f"already {done.decision}: nothing changed (revision {done.revision})")
    elif done.reason:
        print(f"still quarantined: {done.reason} (revision {done.revision})")
    else:
        print(f"{done.decision}; {args.month} is now revision {done.revision}")
    return EXIT_ACCEPT_FAILED if done.decision == "accept_failed" else 0


def _say(args: argparse.Namespace, code: int, message: str) -> int:
    if getattr(args, "json", False):
        print(json.dumps({"status": "refused", "exit_code": code, "message": message}))
    else:
        print(f"report-pipeline: {message}", file=sys.stderr)
    return code

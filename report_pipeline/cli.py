"""`report-pipeline preview PDF --out DIR`: the bounded synchronous path, no Dagster.
`report-pipeline submit REF --month YYYY-MM`: the intake API; launches the month's run.
`report-pipeline show MONTH [--page N]`: what happened to each image of a month (or a page).
`report-pipeline quarantine list|show|decide`: review quarantined images (review_cli.py)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from report_pipeline import review_cli
from report_pipeline.core.archive.summary import summary
from report_pipeline.core.intake.intake import RefusedInput, check_month
from report_pipeline.core.model.settings import Limits, PipelineSettings
from report_pipeline.core.model.store_json import manifest_to_json

EXIT_REFUSED = 3
EXIT_FAILED = 4
EXIT_ERROR = 5  # anything unexpected: one line on stderr, never a traceback
# submit: one exit code per refusal class; 0 = launched, or a duplicate (the existing run id).
SUBMIT_CLASSES = {
    "authorization": (10, ("not_authorized",)),
    "reference": (
        11,
        ("missing", "not_regular", "changed", "unknown_source", "superseded", "still_arriving"),
    ),
    "month": (12, ("bad_month", "unknown_partition", "month_mismatch")),
    "size": (13, ("too_large",)),
    "signature": (14, ("not_pdf",)),
    "pages": (15, ("too_many_pages", "empty")),
    "unreadable": (16, ("encrypted", "damaged", "damaged_xref", "unreadable", "inspection_failed")),
    "page_tree": (17, ("page_count_mismatch", "bad_page_tree")),
}
EXIT_DAGSTER = 20
EXIT_RUN_FAILED = 21  # the revision's run failed: re-execute it, nothing new is launched
_EXITS = "\n".join(
    f"  {code}  {name}: {', '.join(codes)}" for name, (code, codes) in SUBMIT_CLASSES.items()
)
SUBMIT_EPILOG = f"""exit codes:
  0   launched (prints the run id), or a duplicate (prints the existing run id)
{_EXITS}
  {EXIT_DAGSTER}  the Dagster webserver is unreachable or refused the launch
  {EXIT_RUN_FAILED}  the revision's run failed (prints its id): re-execute it from failure in
      the UI; crashed runs are retried automatically. Nothing is launched
  {EXIT_ERROR}   an unexpected error (one line on stderr, no traceback)
  2   usage error

REF is a path inside a configured source (the local inbox: $REPORT_PIPELINE_INBOX or var/inbox)
or s3://bucket/prefix/... for an S3 source. A file outside the month folder is copied into it.
"""


PREVIEW_EPILOG = f"""exit codes:
  0   the manifest is complete
  {EXIT_REFUSED}   the input is refused (the code and a message on stderr)
  {EXIT_FAILED}   the manifest is incomplete
  {EXIT_ERROR}   an unexpected error (one line on stderr, no traceback)
  2   usage error
"""


EXIT_NOT_ARCHIVED = 6  # show: the month has no archived revision
EXIT_NO_PAGE = 7  # show: the archived revision has no such page
SHOW_EPILOG = f"""Reads the month's archived revision (its newest complete manifest) from the
deployment's store: the local store, or S3 with REPORT_PIPELINE_DEPLOYMENT=production.

exit codes:
  0   printed
  {EXIT_NOT_ARCHIVED}   nothing is archived for the month
  {EXIT_NO_PAGE}   the archived report has no such page
  {EXIT_ERROR}   an unexpected error, or the store is unreachable (one line, no traceback)
  2   usage error (a month that is not YYYY-MM)
"""


def _month(text: str) -> str:
    """`show`'s month, checked as intake checks one."""
    try:
        return check_month(text)
    except RefusedInput as bad:
        raise argparse.ArgumentTypeError(bad.message) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="report-pipeline", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    preview = commands.add_parser(
        "preview", help="extract and validate one PDF's images now", epilog=PREVIEW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    preview.add_argument("pdf", type=Path)
    preview.add_argument("--out", type=Path, required=True, help="folder for the PNGs + manifest")
    preview.add_argument("--json", action="store_true", help="print the whole manifest as JSON")
    preview.add_argument("--max-pages", type=int, default=Limits.max_pages)
    submit = commands.add_parser(
        "submit", help="validate a report and launch its month's run", epilog=SUBMIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    submit.add_argument("ref", help="the report: a path in a source, or s3://bucket/key")
    submit.add_argument("--month", required=True, help="the monthly partition, YYYY-MM")
    submit.add_argument("--url", default="http://127.0.0.1:3000", help="Dagster webserver")
    submit.add_argument("--location", default="report_pipeline", help="code location name")
    submit.add_argument("--json", action="store_true", help="one JSON object on stdout")
    show = commands.add_parser(
        "show", help="what happened to each image of a month, or of one page", epilog=SHOW_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    show.add_argument("month", type=_month, help="the monthly partition, YYYY-MM")
    show.add_argument("--page", type=int, help="one page: a line per image occurrence")
    show.add_argument("--json", action="store_true", help="the manifest's records as JSON")
    review_cli.add_commands(commands, _month)
    return parser


def _preview(args: argparse.Namespace) -> int:
    from report_pipeline.core.preview import UnsafeScratch, preview, scratch_base

    if not args.pdf.is_file():
        print("report-pipeline: refused (missing): no such file", file=sys.stderr)
        return EXIT_REFUSED
    try:
        scratch = scratch_base(Path(tempfile.gettempdir()))
        manifest = preview(
            args.pdf, args.out, PipelineSettings(scratch, Limits(max_pages=args.max_pages))
        )
    except RefusedInput as refused:
        print(f"report-pipeline: refused ({refused.code}): {refused.message}", file=sys.stderr)
        return EXIT_REFUSED
    except UnsafeScratch as unsafe:
        print(f"report-pipeline: failed: unsafe scratch folder: {unsafe}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(manifest_to_json(manifest), indent=1))
    else:
        print(summary(manifest, str(args.out / "manifest.json")))
    return 0 if manifest.state == "complete" else EXIT_FAILED


def _submit(args: argparse.Namespace) -> int:
    import dagster as dg

    from report_pipeline.core.intake.submission import submit
    from report_pipeline.defs.deployment.deployment import deployment, resources_for
    from report_pipeline.defs.deployment.partitions import monthly_partitions
    from report_pipeline.defs.reports.ops import stage_report_run_config
    from report_pipeline.graphql_api import DagsterApiError, GraphQLLauncher

    # The deployment's resources, wired from this process's environment now and built as a run
    # builds them (their dg.EnvVar roots resolved): the same roots the code location uses.
    resources = resources_for(deployment())
    launcher = GraphQLLauncher(args.url, stage_report_run_config, args.location)
    try:
        with dg.build_resources({k: resources[k] for k in ("inbox", "settings", "store")}) as built:
            done = submit(
                args.ref, args.month, built.inbox.report_sources(), built.settings.settings(),
                monthly_partitions.has_partition_key, launcher, built.store.get_store(),
                built.inbox.settle_seconds,
            )  # fmt: skip
    except RefusedInput as refused:
        name, code = _refusal_class(refused.code)
        _say(args, code, f"refused ({refused.code}): {refused.message}", refusal=refused.code,
             refusal_class=name)  # fmt: skip
        return code
    except DagsterApiError as error:
        _say(args, EXIT_DAGSTER, str(error), status="error")
        return EXIT_DAGSTER
    admission = done.admission
    details = {
        "run_id": done.run_id, "report_id": admission.report_id, "month": admission.month,
        "revision": admission.revision, "source_hash": admission.source_hash,
        "pages": admission.pages, "bytes": admission.size,
    }  # fmt: skip
    if args.json:
        print(json.dumps({"status": done.status, **details, "detail": done.detail}))
    else:
        print(done.run_id)
        what = {"launched": f"launched {done.run_id}",
                "duplicate": f"duplicate, nothing launched: {done.detail}",
                "failed": f"nothing launched: {done.detail}"}[done.status]  # fmt: skip
        print(f"report-pipeline: {what} ({admission.report_id})", file=sys.stderr)
    return EXIT_RUN_FAILED if done.status == "failed" else 0


def _show(args: argparse.Namespace) -> int:
    import dagster as dg

    from report_pipeline.core.archive.months import latest_archived
    from report_pipeline.core.archive.summary import page_counts, page_occurrences, provenance
    from report_pipeline.core.model import current as month_record
    from report_pipeline.core.model.store_json import child_to_json, record_to_dict
    from report_pipeline.defs.deployment.deployment import deployment, resources_for

    with dg.build_resources({"store": resources_for(deployment())["store"]}) as built:
        store = built.store.get_store()
        found = latest_archived(store, args.month)
        chain = month_record.history(store, args.month) if found else []
    if found is None:
        _say(args, EXIT_NOT_ARCHIVED, f"nothing archived for {args.month}", status="missing")
        return EXIT_NOT_ARCHIVED
    key, manifest = found
    if args.page is None:
        if args.json:
            month = {"manifest_key": key, "report_id": manifest.report_id,
                     "revision": manifest.parent_revision, "state": manifest.state,
                     "extractor_version": manifest.extractor_version,
                     "archive_delete_by": manifest.deadlines.archive_delete_by,
                     "report_file": record_to_dict(manifest.source_file),
                     "revisions": [record_to_dict(head) for head in chain],
                     "counts": asdict(manifest.counts),
                     "pages": [asdict(p) for p in manifest.pages]}  # fmt: skip
            print(json.dumps(month, indent=1))
        else:
            print(
                f"{summary(manifest, key)}\n{provenance(manifest, chain)}\n{page_counts(manifest)}"
            )
        return 0
    if args.page not in {p.page for p in manifest.pages}:
        _say(args, EXIT_NO_PAGE, f"{args.month}'s report has no page {args.page}", status="missing")
        return EXIT_NO_PAGE
    if args.json:
        records = [child_to_json(c) for c in manifest.children if c.page == args.page]
        print(json.dumps(records, indent=1))
    else:
        print(page_occurrences(manifest, args.page))
    return 0


def _refusal_class(refusal: str) -> tuple[str, int]:
    for name, (code, codes) in SUBMIT_CLASSES.items():
        if refusal in codes:
            return name, code
    return "reference", SUBMIT_CLASSES["reference"][0]


def _say(
    args: argparse.Namespace, code: int, message: str, status: str = "refused", **fields: str
) -> None:
    """A refusal or an error: one line on stderr, or one JSON object with --json (on stdout,
    except for an unexpected error, which stays on stderr so a reader of stdout never gets it
    in place of a result)."""
    if getattr(args, "json", False):
        unexpected = code == EXIT_ERROR
        print(json.dumps({"status": status, "exit_code": code, "message": message, **fields}),
              file=sys.stderr if unexpected else sys.stdout)  # fmt: skip
    else:
        print(f"report-pipeline: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"preview": _preview, "submit": _submit, "show": _show, "quarantine": review_cli.run}
    command = commands[args.command]
    try:
        return command(args)
    except Exception as error:  # a bug or the machine, not the report: no traceback, no paths
        _say(args, EXIT_ERROR, f"failed: unexpected {type(error).__name__}", status="error")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())

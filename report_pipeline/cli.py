"""`report-pipeline preview PDF --out DIR [--json]`: the bounded synchronous path, no Dagster."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

from report_pipeline.core.intake import Limits, RefusedInput
from report_pipeline.core.worker import WorkerSettings

EXIT_REFUSED = 3
EXIT_FAILED = 4


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="report-pipeline", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    preview = commands.add_parser("preview", help="extract and validate one PDF's images now")
    preview.add_argument("pdf", type=Path)
    preview.add_argument("--out", type=Path, required=True, help="folder for the PNGs + manifest")
    preview.add_argument("--json", action="store_true", help="print the whole manifest as JSON")
    preview.add_argument("--max-pages", type=int, default=Limits.max_pages)
    return parser


def _summary(manifest: dict) -> str:
    counts = manifest["counts"]
    reasons = Counter(
        c["quarantine_reason"] for c in manifest["children"] if c["state"] != "archived"
    )
    lines = [
        f"{manifest['state']}: {counts['pages']} pages, {counts['expected']} image occurrences",
        f"  archived {counts['archived']} ({counts['distinct_images']} distinct PNGs, "
        f"{counts['duplicate_occurrences']} duplicate occurrences)",
        f"  quarantined {counts['quarantined']}",
    ]
    lines += [f"    {n} x {reason}" for reason, n in sorted(reasons.items())]
    return "\n".join(lines)


def _preview(args: argparse.Namespace) -> int:
    from report_pipeline.core.manifest import dumps
    from report_pipeline.core.pipeline import preview

    settings = WorkerSettings(
        Path(tempfile.gettempdir()) / "report_pipeline-preview", Limits(max_pages=args.max_pages)
    )
    if not args.pdf.is_file():
        print("report-pipeline: refused (missing): no such file", file=sys.stderr)
        return EXIT_REFUSED
    try:
        manifest = preview(args.pdf, args.out, settings)
    except RefusedInput as refused:
        print(f"report-pipeline: refused ({refused.code}): {refused.message}", file=sys.stderr)
        return EXIT_REFUSED
    (args.out / "manifest.json").write_bytes(dumps(manifest))
    print(json.dumps(manifest, indent=1) if args.json else _summary(manifest))
    return 0 if manifest["state"] == "complete" else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "preview":
        return _preview(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())

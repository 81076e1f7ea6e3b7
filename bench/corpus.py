"""Third-party PDFs: how many of the images poppler lists become records in the manifest.

`uv run python -m bench.corpus CORPUS_DIR [--json OUT] [--timeout 120]`, one PDF at a time, with
poppler's `pdfimages -list` as the oracle. Images: its `image` and `stencil` rows (a smask/mask row
belongs to its image); a row is a record when the manifest has a child for its (page, object),
each counted once; inline rows by page: min(poppler's, the manifest's xref-0 records). Also:
refusals (exit 3, code from stderr) and whether poppler (`pdfimages` exits 0 with its listing)
and MuPDF (`pymupdf.open`, no password, pages > 0) open the file, quarantines whose image MuPDF
decodes cleanly (`pymupdf.Pixmap(doc, xref)`, no MuPDF warning), crashes (exit 5, traceback,
signal), timeouts, and runs over 1.5 GiB RSS or 60 s CPU (`os.wait4`: the preview and the
children it reaped). The preview runs in a child under RLIMIT_AS 3 GiB and a wall timeout; the
MuPDF checks in another (`--probe`), so no hostile file can take this process down.

The corpus lives outside the repository: files nobody on the project made, the test PDFs shipped
in registry packages. `pip download --no-deps --no-binary :all: -d SDISTS pikepdf pypdf
pdfminer.six pdfplumber img2pdf ocrmypdf`; PyMuPDF with `--no-binary PyMuPDF` and
`PYMUPDF_SETUP_URL_WHEEL=file://<its wheel>` (its metadata step builds a wheel); `npm pack
pdf-parse@1.1.1`. Unpack them and copy every `*.pdf` (deduplicated by sha256, none over 30 MB)
to e.g. /tmp/corpus/pdfs/ as `<package>__<basename>`. A second corpus: qpdf's test files, from
Debian's source tarball (`http://deb.debian.org/debian/pool/main/q/qpdf/qpdf_11.3.0.orig.tar.gz`),
every `*.pdf` under `qpdf/qtest/qpdf/` copied the same way as `qpdf__<basename>`; many are
broken on purpose, so judge each refusal, quarantine and damaged page by what MuPDF draws.
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
HEAVY_KIB, HEAVY_CPU = int(1.5 * GIB) // 1024, 60.0
IMAGES = {"image", "stencil"}
REFUSAL = re.compile(r"refused \(([^)]*)\)")


def _confine() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * GIB, 3 * GIB))


def run_confined(argv: list[str], timeout: float) -> dict:
    """Run argv in its own session under RLIMIT_AS; its whole group is killed at `timeout`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started, timed_out = time.monotonic(), False
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                preexec_fn=_confine, start_new_session=True)  # fmt: skip
        exited = os.WEXITED | os.WNOHANG | os.WNOWAIT  # the zombie keeps its group id
        while os.waitid(os.P_PID, proc.pid, exited) is None and not timed_out:
            time.sleep(0.02)
            timed_out = time.monotonic() - started > timeout
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # at the timeout, or decoders it left behind
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
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
        return {"opens": False, "pages_load": False, "clean": [], "error": str(error)[:200]}
    loads = opens and all(_loads(doc, number) for number in range(doc.page_count))
    clean = []
    for xref in xrefs:
        pymupdf.TOOLS.reset_mupdf_warnings()
        with contextlib.suppress(Exception):
            pymupdf.Pixmap(doc, xref)
            if not pymupdf.TOOLS.mupdf_warnings():
                clean.append(xref)
    return {"opens": opens, "pages_load": loads, "clean": clean}


def _loads(doc, number: int) -> bool:
    with contextlib.suppress(Exception):
        return doc.load_page(number) is not None
    return False


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
    pages = manifest.get("pages", []) if manifest else []
    refusal = REFUSAL.search(run["stderr"]) if run["exit"] == 3 else None
    listed = Counter((page, obj) for page, kind, obj in rows if kind in IMAGES)
    drawn = Counter((c["page"], c["xref"]) for c in children)
    misses = [[page, obj, n - drawn[page, obj]]
              for (page, obj), n in sorted(listed.items()) if n > drawn[page, obj]]  # fmt: skip
    quarantined = [c for c in children if c["state"] == "quarantined"]
    xrefs = sorted({str(c["xref"]) for c in quarantined if c["xref"] > 0})
    probed = run_confined([sys.executable, "-m", "bench.corpus", "--probe", str(pdf), *xrefs], 60)
    mupdf = {"opens": False, "pages_load": False, "clean": [], "error": probed["exit"]}
    with contextlib.suppress(ValueError):
        mupdf = json.loads(probed["stdout"])
    crash = run["exit"] not in (0, 3, 4) or "Traceback" in run["stderr"]
    return {
        "file": pdf.name, "package": pdf.name.split("__")[0], "exit": run["exit"],
        "timeout": run["timeout"], "stderr": run["stderr"][-300:],
        "crash": crash and not run["timeout"],
        "refusal": refusal and refusal.group(1), "state": manifest and manifest["state"],
        "poppler_opens": poppler_opens, "mupdf_opens": mupdf["opens"],
        "no_reader_refuses": bool(refusal and poppler_opens and mupdf["opens"]),
        "mupdf_pages_load": mupdf["pages_load"], "children": len(children),
        "images": sum(listed.values()), "records": sum(listed.values()) - sum(m[2] for m in misses),
        "misses": misses, "rss_kib": run["rss_kib"], "cpu_s": run["cpu_s"],
        "wall_s": run["wall_s"], "heavy": run["rss_kib"] > HEAVY_KIB or run["cpu_s"] > HEAVY_CPU,
        "quarantined": [[c["page"], c["xref"], c["quarantine_reason"], c["quarantine_detail"],
                         c["xref"] in mupdf["clean"]] for c in quarantined],
        # pages not drawn whole (a content stream broke off: a page-level quarantine), which
        # leave the manifest complete; and streams MuPDF repaired, whose operators parse whole
        "damaged": [[p["page"], p["state"], "; ".join(f"{b['reason']}: {b['what']}"
                                                      for b in p.get("breaks", []))]
                    for p in pages if p.get("state", "complete") != "complete"],
        "repaired": sum(p.get("repaired_streams", 0) for p in pages),
    }  # fmt: skip


COLUMNS = ("files", "poppler", "mupdf", "images", "records", "refused", "no_reader_refuses",
           "incomplete", "damaged", "quarantined", "clean_q", "crash", "timeout",
           "heavy")  # fmt: skip


def summarize(results: list[dict]) -> dict:
    """Per package and in total: the counts of COLUMNS."""
    table: dict[str, Counter] = {}
    for r in results:
        for key in (r["package"], "TOTAL"):
            table.setdefault(key, Counter()).update(
                files=1, poppler=r["poppler_opens"], mupdf=r["mupdf_opens"], images=r["images"],
                records=r["records"], refused=bool(r["refusal"]),
                no_reader_refuses=r["no_reader_refuses"], incomplete=r["state"] == "incomplete",
                damaged=bool(r.get("damaged")),
                quarantined=len(r["quarantined"]), clean_q=sum(q[4] for q in r["quarantined"]),
                crash=r["crash"], timeout=r["timeout"], heavy=r["heavy"])  # fmt: skip
    return {key: dict(row) for key, row in sorted(table.items(), key=lambda kv: kv[0] == "TOTAL")}


def report(results: list[dict], table: dict) -> None:
    print(f"{'package':<10}" + "".join(f"{c:>{len(c) + 2}}" for c in COLUMNS) + "  % records")
    for key, row in table.items():
        pct = 100 * row["records"] / row["images"] if row["images"] else 100.0
        cells = "".join(f"{row.get(c, 0):>{len(c) + 2}}" for c in COLUMNS)
        print(f"{key:<10}{cells}{pct:>10.2f}%")
    rss, cpu = (max(results, key=lambda r: r[k]) for k in ("rss_kib", "cpu_s"))
    print(f"worst RSS {rss['rss_kib'] // 1024} MiB ({rss['file']}), "
          f"worst CPU {cpu['cpu_s']} s ({cpu['file']})")  # fmt: skip
    sections = {
        "misses (file, page, object, how many, outcome)": [
            (r["file"], *m, r["refusal"] or r["state"] or f"exit {r['exit']}")
            for r in results for m in r["misses"]],
        "refusals that both MuPDF and poppler open": [
            (r["file"], r["refusal"], f"{r['images']} images",
             "MuPDF loads every page" if r["mupdf_pages_load"] else "a page MuPDF cannot load")
            for r in results if r["no_reader_refuses"]],
        "quarantines MuPDF decodes cleanly (file, page, xref, reason, detail)": [
            (r["file"], *q[:4]) for r in results for q in r["quarantined"] if q[4]],
        "files with a page not drawn whole (file, page, state, what broke off)": [
            (r["file"], *d) for r in results for d in r.get("damaged", [])],
        "crashes and timeouts": [(r["file"], r["exit"], r["timeout"], r["stderr"][-160:])
                                 for r in results if r["crash"] or r["timeout"]],
        "over 1.5 GiB RSS or 60 s CPU": [(r["file"], f"{r['rss_kib'] // 1024} MiB",
                                          f"{r['cpu_s']} s CPU") for r in results if r["heavy"]],
    }  # fmt: skip
    for title, items in sections.items():
        print(f"\n{title}: {len(items)}")
        for item in items:
            print("  " + "  ".join(str(x) for x in item))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--probe"]:  # internal, in a child: --probe PDF XREF...
        print(json.dumps(probe(argv[1], [int(x) for x in argv[2:]])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a folder of PDFs (outside the repository)")
    parser.add_argument("--json", type=Path, help="write every file's result here")
    parser.add_argument("--timeout", type=float, default=120.0, help="wall seconds per preview")
    args = parser.parse_args(argv)
    results = []
    for pdf in sorted(args.corpus.glob("*.pdf")):
        results.append(r := measure(pdf, args.timeout))
        print(f"{r['file']}: exit {r['exit']}, {r['records']}/{r['images']}", file=sys.stderr)
    if not results:
        parser.error(f"no *.pdf in {args.corpus}")
    report(results, table := summarize(results))
    if args.json:
        record = {"machine": machine(), "corpus": str(args.corpus.resolve()), "summary": table}
        args.json.write_text(json.dumps({**record, "files": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

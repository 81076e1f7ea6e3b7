"""An independent oracle: every image poppler's `pdfimages -list` sees is in the manifest.

Per page, each image or stencil row must be a child record (archived, quarantined with a
reason, or hidden with the reason a viewer does not show it) for that page and object; each
soft-mask or mask row (poppler names it by its image's object) must belong to such an image,
which carries the mask (a soft mask becomes its alpha). The pipeline may list more (poppler skips
images in tiling patterns and Type3 glyphs, and hides marked content of an AllOn membership
dictionary MuPDF shows); never fewer, but for two differences (`POPPLER_ONLY`): poppler lists a
soft mask's image where `gs` sets the mask, and MuPDF's renderer draws it at each paint under
the mask, so a mask set and never used, or used only by an image with a mask of its own, draws
nothing; and poppler draws the stored appearance of a widget that names no field type (/FT),
which MuPDF's renderer never draws. Poppler also lists what MuPDF's renderer never reaches on a
page it stops drawing (too many nested graphics states: `STOPPED`).
"""

import shutil
import subprocess
from collections import Counter

import pymupdf
import pytest

from fixtures import _walks as walks
from fixtures._paths import PATH_PAGES
from report_pipeline_tests.conftest import FIXTURES
from report_pipeline_tests.refusals import UNUSABLE

pytestmark = pytest.mark.slow

REFUSED = {  # fixtures that are refused whole, with the code that accounts for them
    **UNUSABLE,
    **walks.REASONS,  # the page walk stops at a limit: nothing is archived
}
# The fixtures the pipeline archives, each compared with poppler; the refused ones list nothing
# to compare, and the pipeline tests run each and assert its code (test_fixture_cases.py
# UNUSABLE, test_walk.py walks.REASONS, with its time and CPU).
ACCOUNTED = sorted(p.name for p in FIXTURES.glob("*.pdf") if p.name not in REFUSED)
# pages where poppler lists one image that MuPDF never draws: a soft mask's (fixtures/_paints.py),
# the mask set and nothing painted under it, or under an image with an /SMask of its own; a
# widget's without /FT (fixtures/_appearances.py)
POPPLER_ONLY = {"pattern_paints.pdf": {6, 13}, "annotation_appearances.pdf": {8}}
# pages where poppler lists one image drawn by forms nested deeper than the walk follows
# (drawn.MAX_NESTING, 24): the manifest marks each such page damaged, `stream_too_deep`
DEEPER = {"hostile_walk_deep.pdf": {1}}
# images poppler lists after a `q` past the 2,048 graphics states MuPDF's renderer holds, where
# it stops drawing the page (fixtures/_deep_states.py): each such page is damaged,
# `stream_unreadable`; page 2's second image and its annotation's, page 3's form's
STOPPED = {"deep_states.pdf": Counter({2: 2, 3: 1})}


def pdfimages_rows(path) -> list[tuple[int, str, int]]:
    """(page, type, object number or 0 for an inline image) for every image poppler lists."""
    binary = shutil.which("pdfimages")
    if binary is None:
        pytest.fail("pdfimages is missing: install Debian poppler-utils (.ci/system-packages)")
    listing = subprocess.run(
        [binary, "-list", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    rows = []
    for line in listing.splitlines()[2:]:
        cells = line.split()
        rows.append((int(cells[0]), cells[2], 0 if cells[10] == "[inline]" else int(cells[10])))
    return rows


def masks_of(doc: pymupdf.Document, xref: int) -> set[int]:
    found = set()
    for key in ("SMask", "Mask"):
        kind, value = doc.xref_get_key(xref, key)
        if kind == "xref":
            found.add(int(value.split()[0]))
    return found


def test_the_fixtures_refused_whole_are_committed_fixtures():
    assert set(REFUSED) <= {p.name for p in FIXTURES.glob("*.pdf")}
    assert len(ACCOUNTED) + len(REFUSED) == len(list(FIXTURES.glob("*.pdf")))


@pytest.mark.parametrize("name", ACCOUNTED)
def test_every_image_pdfimages_lists_is_accounted_for(name, shared_run):
    """The manifest of a run of each (conftest.shared_run: run once, read here and elsewhere)."""
    _, manifest = shared_run(name)
    rows = pdfimages_rows(FIXTURES / name)
    children = manifest.children
    assert all(c.state == "archived" or c.quarantine_reason or c.state == "hidden" and c.hidden
               for c in children)  # fmt: skip
    drawn = Counter((c.page, c.xref) for c in children)
    listed = Counter((page, obj) for page, kind, obj in rows if kind in {"image", "stencil"})
    lacking = Counter(page for page, _ in (listed - drawn).elements())
    expected = Counter(POPPLER_ONLY.get(name, ())) + Counter(DEEPER.get(name, ()))
    expected += STOPPED.get(name, Counter())
    assert lacking == expected, f"pdfimages lists images the manifest lacks: {listed - drawn}"
    too_deep = {row.page for row in manifest.pages if row.reason == "stream_too_deep"}
    assert too_deep >= DEEPER.get(name, set())
    with pymupdf.open(FIXTURES / name) as doc:  # poppler names a mask by its image's object
        has_mask = {x: bool(masks_of(doc, x)) for x in {c.xref for c in children if c.xref}}
        masked = {(c.page, c.xref) for c in children if c.xref and has_mask[c.xref]}
    for page, kind, obj in rows:
        if kind not in {"image", "stencil"}:
            assert (page, obj) in masked, f"{kind} of {obj} on page {page} belongs to no image"


def test_every_path_a_page_draws_an_image_by_is_recorded_with_its_origin(shared_run):
    _, manifest = shared_run("image_paths.pdf")
    assert manifest.state == "complete"
    origins = {}
    for child in manifest.children:
        assert child.state == "archived", child
        origins.setdefault(child.page, []).append(child.origin)
    assert origins == PATH_PAGES


def test_an_image_drawn_twice_on_a_page_is_two_records_and_one_object(shared_run):
    _, manifest = shared_run("image_paths.pdf")
    twice = [c for c in manifest.children if c.page == 9 and c.origin == "xobject"]
    assert len(twice) == 2 and twice[0].object_key == twice[1].object_key

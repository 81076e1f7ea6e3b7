"""Every fixture case, with the outcome it is there to prove (see fixtures/README.md): read from
the session's one run of each (conftest.shared_run), which the oracle reads too."""

import io
from collections import Counter

import pytest
from PIL import Image

from report_pipeline.core.intake.intake import RefusedInput
from report_pipeline.core.storage.local_store import LocalStore
from report_pipeline_tests.refusals import UNUSABLE

pytestmark = pytest.mark.slow


def reasons(manifest):
    return Counter(c.quarantine_reason for c in manifest.children if c.quarantine_reason)


def image(store, child):
    return Image.open(io.BytesIO(store.get_bytes(child.object_key, 1 << 26)))


def test_monthly_report_accounts_for_every_page_and_image(shared_run):
    _, manifest = shared_run("monthly_report.pdf")  # run once for the session's tests that read it
    counts = manifest.counts
    assert manifest.state == "complete"
    assert (counts.pages, counts.expected, counts.accounted) == (140, 423, 423)
    assert (counts.archived, counts.quarantined, counts.distinct_images) == (421, 2, 285)
    bad = {(c.page, c.quarantine_reason) for c in manifest.children if c.state != "archived"}
    assert bad == {(50, "truncated"), (100, "signature_mismatch")}  # the two broken scans
    empty = [p.page for p in manifest.pages if p.expected == 0]
    assert empty == [10, 70, 139]
    logo = Counter(c.content_hash for c in manifest.children).most_common(1)[0]
    assert logo[1] == 137  # the logo: one object, listed on every page that draws it


def test_large_valid_image_is_archived(shared_run):
    (child,) = shared_run("large_dimensions.pdf")[1].children
    assert (child.state, child.width, child.height) == ("archived", 4800, 3600)


def test_pixel_bomb_is_quarantined_before_any_decode(shared_run):
    _, manifest = shared_run("pixel_bomb.pdf")
    (child,) = manifest.children
    assert child.state == "quarantined" and child.quarantine_reason == "pixel_cap_exceeded"
    assert child.stream_bytes < 1000 and child.attempts == 1
    assert manifest.state == "complete"  # quarantined children count as accounted for


def test_truncated_jpeg_is_quarantined_and_its_neighbour_archived(shared_run):
    folder, manifest = shared_run("truncated_jpeg.pdf")
    store = LocalStore(folder)
    assert reasons(manifest) == {"truncated": 1}
    bad = next(c for c in manifest.children if c.state == "quarantined")
    assert store.exists(bad.object_key)  # the raw stream is kept for review
    assert bad.object_key.split("/")[3] == "quarantine"
    assert manifest.counts.archived == 1


def test_bytes_that_do_not_match_the_declared_type_are_quarantined(shared_run):
    _, manifest = shared_run("type_mismatch.pdf")
    assert reasons(manifest) == {"signature_mismatch": 1}
    assert manifest.children[0].signature is None


def test_repeated_image_is_stored_once_and_listed_everywhere(shared_run):
    folder, manifest = shared_run("repeated_image.pdf")
    store = LocalStore(folder)
    counts = manifest.counts
    assert (counts.expected, counts.archived, counts.distinct_images) == (15, 15, 2)
    objects = [o for o in store.list(manifest_prefix(manifest)) if "/images/" in o.key]
    assert len(objects) == 2


def manifest_prefix(manifest):
    return f"archive/{manifest.report_id}/{manifest.parent_revision}"


def test_cmyk_and_icc_images_become_rgb_pngs(shared_run):
    folder, manifest = shared_run("cmyk_icc.pdf")
    store = LocalStore(folder)
    assert [c.mode for c in manifest.children] == ["RGB"] * 3
    for child in manifest.children:
        picture = image(store, child)
        assert picture.format == "PNG" and picture.mode == "RGB"
        low, high = zip(*picture.getextrema(), strict=True)
        assert max(high) > 100  # not a black or inverted-to-dark CMYK conversion


def test_soft_mask_becomes_the_alpha_channel(shared_run):
    folder, manifest = shared_run("soft_mask.pdf")
    store, (child,) = LocalStore(folder), manifest.children
    picture = image(store, child)
    assert child.mode == picture.mode == "RGBA"
    alpha = picture.getchannel("A")
    assert alpha.getextrema()[0] < 50 and alpha.getextrema()[1] > 200
    assert alpha.getpixel((120, 120)) > alpha.getpixel((2, 2))  # opaque centre, clear edge


def test_report_without_images_is_complete_with_zero_children(shared_run):
    _, manifest = shared_run("no_images.pdf")
    assert manifest.state == "complete" and manifest.children == ()
    assert [p.page for p in manifest.pages] == [1, 2, 3]


@pytest.mark.parametrize(("name", "code"), sorted(UNUSABLE.items()))
def test_unusable_files_are_refused_and_nothing_is_archived(run_fixture, store, name, code):
    with pytest.raises(RefusedInput) as caught:
        run_fixture(name)
    assert caught.value.code == code
    assert list(store.list("")) == []


def test_normalized_pngs_match_their_content_hash(shared_run):
    import hashlib

    folder, manifest = shared_run("repeated_image.pdf")
    store = LocalStore(folder)
    for child in manifest.children:
        data = store.get_bytes(child.object_key, 1 << 26)
        assert hashlib.sha256(data).hexdigest() == child.content_hash
        assert data[:8] == b"\x89PNG\r\n\x1a\n"

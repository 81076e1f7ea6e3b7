"""Classes from the eleventh crafted round (issue 30), each against MuPDF's drawing device: an
uncoloured (`d1`) Type3 glyph that selects a pattern paints no pattern; `BI … EI` inside a
comment or a string is no inline image; a filter name MuPDF does not know is passed through; an
inline image's ASCII85 data ended by a stray `~` is `undecodable`, as an image object's is; a
fax image's /Rows disagree with its /Height only where MuPDF's decoder reads them; an encrypted
document's stream whose chain begins with a named /Crypt filter is read decrypted by it."""

from __future__ import annotations

import base64
import io
import zlib

import pymupdf
import pytest
from PIL import Image

from fixtures._objects import Objects, image, stream
from fixtures._verify_draws import device_draws
from report_pipeline.core.draws.operators import inline_images
from report_pipeline.core.model.settings import Limits
from report_pipeline.core.pdf.pages import filter_chain, page_images, raw_stream, walk_page
from report_pipeline.core.plan import walk
from report_pipeline.core.validate import per_image


def _glyph_page(glyph: bytes, filled: bool = False) -> bytes:
    """A page showing two glyphs `A` of a Type3 font whose resources hold a pattern /P whose
    cell draws an image, and a form /Fm that fills with it; `glyph` is its procedure. `filled`:
    the page's text is filled with that pattern."""
    o = Objects()
    drawn = o.add(image(40))
    pattern = o.add(stream(b"/PatternType 1/PaintType 1/TilingType 1/BBox[0 0 1000 1000]"
                           b"/XStep 1000/YStep 1000/Resources<</XObject<</T %d 0 R>>>>" % drawn,
                           b"q 1000 0 0 1000 0 0 cm /T Do Q"))  # fmt: skip
    form = o.add(stream(b"/Type/XObject/Subtype/Form/BBox[0 0 1000 1000]"
                        b"/Resources<</Pattern<</P %d 0 R>>>>" % pattern,
                        b"/Pattern cs /P scn 0 0 800 800 re f"))  # fmt: skip
    proc = o.add(stream(b"", glyph))
    font = o.add(b"<</Type/Font/Subtype/Type3/FontBBox[0 0 1000 1000]"
                 b"/FontMatrix[0.001 0 0 0.001 0 0]/CharProcs<</g %d 0 R>>"
                 b"/Encoding<</Type/Encoding/Differences[65/g]>>/FirstChar 65/LastChar 65"
                 b"/Widths[1000]/Resources<</Pattern<</P %d 0 R>>/XObject<</Fm %d 0 R>>>>>>"
                 % (proc, pattern, form))  # fmt: skip
    fill = b"/Pattern cs /P scn " if filled else b""
    o.page(b"<</Font<</T3 %d 0 R>>/Pattern<</P %d 0 R>>>>" % (font, pattern),
           fill + b"BT /T3 50 Tf 20 20 Td (AA) Tj ET")  # fmt: skip
    return o.pdf()


D1 = b"1000 0 0 0 1000 1000 d1 "


@pytest.mark.parametrize(
    ("glyph", "filled", "drawn"),
    [
        (b"1000 0 d0 /Pattern cs /P scn 0 0 800 800 re f", False, 2),  # coloured: each glyph
        (D1 + b"/Pattern cs /P scn 0 0 800 800 re f", False, 0),  # a mask
        (D1 + b"/P scn 0 0 800 800 re f", False, 0),
        (D1 + b"/Pattern CS /P SCN 0 0 800 800 re S", False, 0),
        (D1 + b"/Fm Do", False, 0),  # nor in a form it runs
        (D1 + b"/Fm Do", True, 1),  # the text filled with the pattern paints it once
        # the glyph strokes with a width it does not set: MuPDF cannot cache it and runs it in
        # the page's state, filled with the pattern, which its `0 g` does not change
        (D1 + b"0 0 800 800 re S 0 g 0 0 500 500 re f", True, 2),
    ],
)  # fmt: skip
def test_an_uncoloured_glyph_paints_no_pattern_it_selects(glyph, filled, drawn):
    """MuPDF ignores every colour operator of a `d1` glyph (it paints as a mask in the text's
    colour): the pattern it selects never runs, and the text's pattern stays. Its images were
    records once per glyph, and a glyph run in the page's state painted no pattern after `g`."""
    with pymupdf.open(stream=_glyph_page(glyph, filled), filetype="pdf") as doc:
        assert device_draws(doc[0]) == drawn
        assert len(page_images(doc, 1)) == drawn


@pytest.mark.parametrize(
    ("content", "begun"),
    [
        (b"% /Im Do BI /W 1 ID x EI\nq Q", 0),
        (b"BT (a BI /W 1 ID x EI ) Tj ET", 0),
        (b"BT (a (nested BI /W 1 ID x EI) b) Tj ET", 0),
        (b"q BI /W 1 /H 1 /BPC 8 /CS /G ID x EI Q % BI\nBI /W 1 ID", 2),
    ],
)  # fmt: skip
def test_only_bi_operators_begin_inline_images(content, begun):
    assert inline_images(content) == begun


def test_an_inline_image_in_a_comment_or_a_string_is_no_record():
    """The letters `BI … EI` in a comment or a string are no inline image for MuPDF: the page
    drew one image and was one archived record plus one quarantined (`undecodable`, "MuPDF did
    not read it") for the comment, and one for the string."""
    o = Objects()
    drawn = o.add(image(40))
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn,
           b"% BI /W 1 /H 1 /BPC 8 /CS /G ID x EI\nBT (BI /W 1 ID x EI ) Tj ET "
           b"q 10 0 0 10 0 0 cm /Im Do Q")  # fmt: skip
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        refs, _ = walk_page(doc, 1)
        assert len(refs) == device_draws(doc[0]) == 1
        assert walk._unread_inline_images(doc, 1, refs) == (0, 0)


@pytest.mark.parametrize(
    "chain",
    [b"[/FooDecode/FlateDecode]", b"[/FlateDecode/FooDecode]", b"/FooDecode", b"[/X#20Y/Fl]"],
)
def test_a_filter_name_mupdf_does_not_know_is_passed_through(chain):
    """MuPDF says "unknown filter name (FooDecode)" and decodes the rest of the chain: the
    image it draws is archived as it draws it. Before a known filter it was `undecodable`
    ("FooDecode cannot be decoded before another filter")."""
    samples = bytes(range(0, 256, 4))
    data = samples if chain == b"/FooDecode" else zlib.compress(samples)
    o = Objects()
    drawn = o.add(stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceGray"
                         b"/BitsPerComponent 8/Filter%s" % chain, data))  # fmt: skip
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        assert filter_chain(doc, ref.xref)[0] == (
            () if chain == b"/FooDecode" else ("FlateDecode",)
        )
        processed = per_image.process_image(doc, ref, Limits())
        assert processed.outcome.state == "validated", processed.outcome
        pixmap = pymupdf.Pixmap(doc, ref.xref)
        assert pixmap.samples == samples


def test_inline_ascii85_data_ended_by_a_stray_tilde_is_undecodable_not_truncated():
    """MuPDF decodes an inline image's ASCII85 layer while it parses the page and ends it at
    its first `~` ("bad eod marker"): a PostScript `<~` opening (whose `<` it reads as data),
    or a `~` before more data, leaves the image short however complete its text is, as for an
    image object (`undecodable`); it was `truncated`. Text that ends at `~>` short of the
    image's samples stays `truncated`."""
    samples = bytes(range(0, 256, 4))
    text = base64.a85encode(samples)
    inline_images_drawn = [b"<~" + text + b"~>", text[:20] + b"~" + text[20:] + b"~>",
                           text[:40] + b"~>"]  # fmt: skip
    o = Objects()
    o.page(b"<<>>", b" ".join(b"q 10 0 0 10 0 0 cm BI /W 8 /H 8 /CS /G /BPC 8 /F /A85 ID %s EI Q"
                              % data for data in inline_images_drawn))  # fmt: skip
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as doc:
        refs = page_images(doc, 1)
        outcomes = [per_image.process_image(doc, ref, Limits()).outcome for ref in refs]
    assert [(x.state, x.reason) for x in outcomes] == [
        ("quarantined", "undecodable"), ("quarantined", "undecodable"),
        ("quarantined", "truncated"),
    ]  # fmt: skip
    assert "PostScript's <~" in outcomes[0].detail and "<~" not in outcomes[1].detail


def _g4() -> bytes:
    """A 40x20 checkerboard's one TIFF strip, CCITT Group 4 encoded by libtiff (it ends with
    an end-of-block)."""
    board = Image.new("1", (40, 20), 1)
    board.putdata([0 if (x // 5 + y // 4) % 2 else 1 for y in range(20) for x in range(40)])
    out = io.BytesIO()
    board.save(out, "TIFF", compression="group4")
    tiff = Image.open(io.BytesIO(out.getvalue()))
    start, length = tiff.tag_v2[273][0], tiff.tag_v2[279][0]
    return out.getvalue()[start : start + length]


def _fax_page(parms: bytes) -> bytes:
    o = Objects()
    drawn = o.add(stream(b"/Type/XObject/Subtype/Image/Width 40/Height 20/ColorSpace/DeviceGray"
                         b"/BitsPerComponent 1/Filter/CCITTFaxDecode"
                         b"/DecodeParms<</K -1/Columns 40%s>>" % parms, _g4()))  # fmt: skip
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    return o.pdf()


@pytest.mark.parametrize(
    ("parms", "state"),
    [
        (b"/Rows 10", "validated"),  # MuPDF decodes to the end-of-block, all 20 rows
        (b"/Rows 30", "validated"),
        (b"/Rows 30/EndOfBlock false", "validated"),  # it reads the 20 rows the image takes
        (b"/Rows 10/EndOfBlock false", "quarantined"),  # it stops after 10 rows and pads
    ],
)  # fmt: skip
def test_a_fax_images_rows_disagree_with_its_height_only_where_mupdf_reads_them(parms, state):
    """MuPDF's fax decoder ignores /Rows but for data without an end-of-block (/EndOfBlock
    false), which it stops after /Rows rows: only fewer rows than /Height leave it short
    (`dimension_mismatch`). Every /Rows other than /Height was `dimension_mismatch`, though
    MuPDF drew the whole image."""
    with pymupdf.open(stream=_fax_page(b""), filetype="pdf") as doc:
        whole = pymupdf.Pixmap(doc, page_images(doc, 1)[0].xref).samples
    with pymupdf.open(stream=_fax_page(parms), filetype="pdf") as doc:
        (ref,) = page_images(doc, 1)
        outcome = per_image.process_image(doc, ref, Limits()).outcome
        drawn = pymupdf.Pixmap(doc, ref.xref).samples
    expected = "dimension_mismatch" if state == "quarantined" else None
    assert (outcome.state, outcome.reason) == (state, expected)
    assert (drawn == whole) == (state == "validated")


@pytest.mark.parametrize("method", [pymupdf.PDF_ENCRYPT_AES_128, pymupdf.PDF_ENCRYPT_RC4_128])
@pytest.mark.parametrize(
    "chain",
    [
        b"/Filter[/Crypt/FlateDecode]/DecodeParms[<</Name/StdCF>>null]",
        b"/Filter[/Crypt/FlateDecode]/DecodeParms[<</Type/CryptFilterDecodeParms/Name/StdCF>>null]",
        b"/Filter/Crypt/DecodeParms<</Name/StdCF>>",
    ],
)
def test_a_stream_its_crypt_filter_decrypts_is_read_decrypted(chain, method):
    """In an encrypted document a stream whose chain begins with a /Crypt filter naming the
    document's crypt filter is decrypted by it, not by MuPDF's raw read: its image was
    `undecodable` ("Crypt cannot be decoded before another filter") or read encrypted, though
    MuPDF draws it. (MuPDF's writer encrypts it with the document's key, as that names.)"""
    samples = bytes(range(0, 256, 4))
    data = samples if b"[" not in chain else zlib.compress(samples)
    o = Objects()
    drawn = o.add(stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceGray"
                         b"/BitsPerComponent 8" + chain, data))  # fmt: skip
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as plain:
        encrypted = plain.tobytes(encryption=method, owner_pw="owner", user_pw="")
    with pymupdf.open(stream=encrypted, filetype="pdf") as doc:
        assert device_draws(doc[0]) == 1
        (ref,) = page_images(doc, 1)
        assert filter_chain(doc, ref.xref)[0] == (("FlateDecode",) if b"[" in chain else ())
        assert raw_stream(doc, ref.xref) == data
        processed = per_image.process_image(doc, ref, Limits())
        assert processed.outcome.state == "validated", processed.outcome
        assert pymupdf.Pixmap(doc, ref.xref).samples == samples


def test_a_crypt_filter_the_document_does_not_define_is_undecodable():
    """/Name /Foo, which the /Encrypt dictionary's /CF lacks: MuPDF cannot open the stream and
    draws nothing of it; it is one quarantined record saying so, not a decoder's crash."""
    o = Objects()
    drawn = o.add(stream(b"/Type/XObject/Subtype/Image/Width 8/Height 8/ColorSpace/DeviceGray"
                         b"/BitsPerComponent 8/Filter[/Crypt/FlateDecode]"
                         b"/DecodeParms[<</Name/Foo>>null]", zlib.compress(bytes(64))))  # fmt: skip
    o.page(b"<</XObject<</Im %d 0 R>>>>" % drawn, b"q 100 0 0 100 0 0 cm /Im Do Q")
    with pymupdf.open(stream=o.pdf(), filetype="pdf") as plain:
        encrypted = plain.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_128, user_pw="")
    pymupdf.TOOLS.mupdf_display_errors(False)
    with pymupdf.open(stream=encrypted, filetype="pdf") as doc:
        assert device_draws(doc[0]) == 0
        (ref,) = page_images(doc, 1)
        outcome = per_image.process_image(doc, ref, Limits()).outcome
    assert (outcome.state, outcome.reason) == ("quarantined", "undecodable")
    assert outcome.detail.startswith("MuPDF could not decrypt it: ")


def _inline_a85_in(container: str, data: bytes) -> bytes:
    """A page whose inline image of ASCII85 text `data` lies in a `container`'s content: a form,
    a form in a form, a pattern's cell, a Type3 glyph's procedure, an annotation's appearance, a
    soft mask's group."""
    drawn = b"q 10 0 0 10 0 0 cm BI /W 8 /H 8 /CS /G /BPC 8 /F /A85 ID %s EI Q" % data
    o = Objects()
    if container in ("form", "form in a form"):
        inner = o.add(stream(b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]", drawn))
        if container == "form in a form":
            outer = b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]/Resources<</XObject<</In"
            inner = o.add(stream(outer + b" %d 0 R>>>>" % inner, b"/In Do"))
        o.page(b"<</XObject<</Fm %d 0 R>>>>" % inner, b"/Fm Do")
    elif container == "pattern":
        cell = o.add(stream(b"/PatternType 1/PaintType 1/TilingType 1/BBox[0 0 200 200]"
                            b"/XStep 200/YStep 200", drawn))  # fmt: skip
        o.page(b"<</Pattern<</P %d 0 R>>>>" % cell, b"/Pattern cs /P scn 0 0 100 100 re f")
    elif container == "type3 glyph":
        proc = o.add(stream(b"", b"10 0 d0 " + drawn))
        font = o.add(b"<</Type/Font/Subtype/Type3/FontBBox[0 0 10 10]/FontMatrix[0.1 0 0 0.1 0 0]"
                     b"/CharProcs<</a %d 0 R>>/Encoding<</Type/Encoding/Differences[97/a]>>"
                     b"/FirstChar 97/LastChar 97/Widths[10]/Resources<<>>>>" % proc)  # fmt: skip
        o.page(b"<</Font<</T %d 0 R>>>>" % font, b"BT /T 12 Tf 20 100 Td (a) Tj ET")
    elif container == "soft mask":
        group = o.add(stream(b"/Type/XObject/Subtype/Form/BBox[0 0 200 200]"
                             b"/Group<</S/Transparency/CS/DeviceGray>>", drawn))  # fmt: skip
        o.page(b"<</ExtGState<</GS<</SMask<</Type/Mask/S/Luminosity/G %d 0 R>>>>>>>>" % group,
               b"/GS gs 0 0 50 50 re f")  # fmt: skip
    else:
        look = o.add(stream(b"/Type/XObject/Subtype/Form/BBox[0 0 100 100]", drawn))
        annot = o.add(b"<</Type/Annot/Subtype/Square/Rect[0 0 100 100]/F 4/AP<</N %d 0 R>>>>"
                      % look)  # fmt: skip
        o.page(b"<<>>", b"", b"/Annots[%d 0 R]" % annot)
    return o.pdf()


@pytest.mark.parametrize(
    "container", ["form", "form in a form", "pattern", "type3 glyph", "annotation", "soft mask"]
)
def test_inline_ascii85_ended_by_a_stray_tilde_is_undecodable_wherever_it_is_drawn(container):
    """The same rule in a form's, a pattern's, a Type3 glyph's or an annotation appearance's
    content as in a page's own (issue 30 leftovers): their text is found in the streams the
    page runs, not only in its content; it stayed `truncated`."""
    text = base64.a85encode(bytes(range(0, 256, 4)))
    for data, reason in ((b"<~" + text + b"~>", "undecodable"),
                         (text[:20] + b"~" + text[20:] + b"~>", "undecodable"),
                         (text[:40] + b"~>", "truncated")):  # fmt: skip
        with pymupdf.open(stream=_inline_a85_in(container, data), filetype="pdf") as doc:
            (ref,) = page_images(doc, 1)
            assert ref.origin.endswith("inline"), ref.origin
            outcome = per_image.process_image(doc, ref, Limits()).outcome
        assert (outcome.state, outcome.reason) == ("quarantined", reason), (data, outcome)

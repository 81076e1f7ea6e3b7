"""What a viewer shows of a page: optional content and annotation flags, judged as MuPDF's
renderer judges them with its "View" usage.

The walk's processor runs without a usage, so MuPDF's interpreter hands it every draw, shown or
not: with "View" it would skip an image or form whose own /OC is off, and a NoView annotation,
without a word, and they would be absent from the manifest instead of accounted for. This mixin
tells which draws a viewer does not show, and why, with MuPDF's own test (`pdf_is_ocg_hidden`
with "View": the document's default configuration, its intents and usage dictionaries) and the
annotation flags MuPDF's renderer honours:

- `optional_content_off`: drawn inside marked content (`/OC /L BDC … EMC`) whose optional
  content group or membership dictionary is off, by an image or form XObject drawn (`Do`) with
  its own /OC off, or by an annotation whose /OC is off (MuPDF tests an XObject's /OC at a
  `Do` only: an annotation's appearance is drawn whatever its own /OC says);
- `annotation_hidden`: in the appearance of an annotation flagged Invisible (1), Hidden (2) or
  NoView (32). MuPDF's renderer never looks at the first two, so their normal appearance is
  run here.

A hidden draw is a record of its own (state `hidden`), not archived unless the deployment asks
(`Limits.archive_hidden`). Everything drawn inside hidden content is hidden, for the same
reason. A mixin for `drawn.DrawFinder`, which provides `doc`, `run`, `process`, `cookie`,
`form` and `flush_text`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from pymupdf import mupdf

from report_pipeline.core.draws import tiles
from report_pipeline.core.draws.callbacks import guarded

OPTIONAL_CONTENT_OFF = "optional_content_off"
ANNOTATION_HIDDEN = "annotation_hidden"
USAGE = "View"  # the renderer's usage for a page on screen
_INVISIBLE, _HIDDEN, _NO_VIEW = 1, 2, 32  # annotation flags (/F)
# operators (as bytes anywhere in a stream: `scn`, `SCN` too) by which a stream run in a fresh
# graphics state may draw an image, but for a Type3 font's glyphs (`Tf`)
_IMAGE_OPERATORS = (b"Do", b"BI", b"sc", b"SC", b"gs")


class Visibility:
    def __init__(self, *args) -> None:
        super().__init__(*args)
        # MuPDF's own `hidden` counter for marked content: inside an off /OC block it counts the
        # blocks open, and it carries into the forms, patterns and masks run from there
        self.marked_off = 0
        self.hiding: list[str] = []  # why the streams being run are hidden (a form's own /OC)
        self.type3_fonts: dict[int, bool] = {}  # font object -> a Type3 font (annotations)
        self.page_type3: bool | None = None  # the page's resources name a Type3 font
        for op in ("op_BDC", "op_BMC", "op_EMC"):
            getattr(self, f"use_virtual_{op}")()

    @property
    def hidden(self) -> str:
        """Why what is drawn now is not shown ("" when it is)."""
        if self.hiding:
            return self.hiding[0]
        return OPTIONAL_CONTENT_OFF if self.marked_off else ""

    def off(self, oc: mupdf.PdfObj | None) -> bool:
        """An /OC entry (an optional content group or membership dictionary) is off in View."""
        if oc is None or not oc.m_internal:
            return False
        return bool(mupdf.ll_pdf_is_ocg_hidden(self.doc.m_internal, None, USAGE, oc.m_internal))

    def hidden_with(self, xobject: mupdf.PdfObj | None) -> str:
        """Why an XObject drawn now is not shown: the content around it, or its own /OC."""
        if self.hidden or xobject is None:
            return self.hidden
        own = mupdf.pdf_dict_get(xobject, mupdf.PDF_ENUM_NAME_OC)
        return OPTIONAL_CONTENT_OFF if self.off(own) else ""

    @contextmanager
    def hidden_as(self, reason: str) -> Iterator[None]:
        """What is drawn inside is hidden for `reason` (an XObject's own /OC)."""
        pushed = bool(reason) and not self.hidden
        if pushed:
            self.hiding.append(reason)
        try:
            yield
        finally:
            if pushed:
                self.hiding.pop()

    # -- marked content: MuPDF paints what a block holds after flushing the text before it ----
    @guarded
    def op_BDC(self, ctx, tag, raw, cooked) -> None:
        self.flush_text()
        if self.marked_off:
            self.marked_off += 1
        elif tag == "OC" and cooked is not None:
            self.marked_off = int(self.off(mupdf.PdfObj(mupdf.ll_pdf_keep_obj(cooked))))

    @guarded
    def op_BMC(self, ctx, tag) -> None:
        self.flush_text()
        if self.marked_off:
            self.marked_off += 1

    @guarded
    def op_EMC(self, ctx) -> None:
        self.flush_text()
        if self.marked_off:
            self.marked_off -= 1

    # -- annotations ----------------------------------------------------------------------
    def annotation(self, annot: mupdf.PdfAnnot) -> None:
        """Run an annotation's appearance as MuPDF's renderer runs it (`pdf_run_annot`: a
        processor of its own, no marked content carried over from the page), with the reason a
        viewer hides it. The appearance is the one MuPDF's renderer draws: the one it made when
        it loaded the page, where it made one (a form that asks for new appearances, an unsigned
        signature field, an annotation without one), else the file's. A widget that is no form
        field (no /FT or no /T, itself or inherited) is never drawn: no record."""
        obj = mupdf.pdf_annot_obj(annot)
        if not drawn_widget(obj):
            return
        flags = mupdf.pdf_dict_get_int(obj, mupdf.PDF_ENUM_NAME_F)
        reason = ANNOTATION_HIDDEN if flags & (_INVISIBLE | _HIDDEN | _NO_VIEW) else ""
        if not reason and self.off(mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_OC)):
            reason = OPTIONAL_CONTENT_OFF
        self.marked_off = 0
        self.hiding = [reason] if reason else []
        mupdf.pdf_annot_push_local_xref(annot)  # MuPDF's own appearances, as its renderer
        try:
            if self.made_without_images(annot):
                return
            if flags & (_INVISIBLE | _HIDDEN):  # MuPDF's processor would not look at it
                if mupdf.pdf_annot_type(annot) != mupdf.PDF_ANNOT_POPUP:  # never drawn
                    appearance = mupdf.pdf_annot_ap(annot)
                    if appearance.m_internal:
                        self._placed(annot)  # as MuPDF's processor places a shown one
                        self.form(appearance, appearance=True)
            else:
                self.running([], lambda: mupdf.pdf_process_annot(self, annot, self.cookie))
        finally:
            mupdf.pdf_annot_pop_local_xref(annot)
            self.hiding = []

    def _placed(self, annot: mupdf.PdfAnnot) -> None:
        """The transformation MuPDF's processor sets (`cm`) before an annotation's appearance."""
        m, ctm = mupdf.pdf_annot_transform(annot), self.paint.ctm
        placed = (m.a, m.b, m.c, m.d, m.e, m.f)
        self.paint = replace(self.paint, ctm=None if ctm is None else tiles.concat(placed, ctm))

    def made_without_images(self, annot: mupdf.PdfAnnot) -> bool:
        """True when the annotation's appearance is one MuPDF made (no object of the file: read
        with the annotation's local xref pushed) and it cannot draw an image: none of the
        operators that can (`_IMAGE_OPERATORS`), and no Type3 font in its resources or the
        page's for a `Tf`. Running it would add no record and cannot break off, at a cost:
        MuPDF makes one for every field of a form that asks for new appearances."""
        try:
            appearance = mupdf.pdf_annot_ap(annot)
            if not appearance.m_internal or not mupdf.pdf_is_local_object(self.doc, appearance):
                return False
            content = mupdf.fz_buffer_extract(mupdf.pdf_load_stream(appearance))
            if any(operator in content for operator in _IMAGE_OPERATORS):
                return False
            if b"Tf" not in content:
                return True
            if self.page_type3 is None:
                self.page_type3 = self.type3(mupdf.pdf_page_resources(mupdf.pdf_annot_page(annot)))
            return not (self.page_type3 or self.type3(mupdf.pdf_xobject_resources(appearance)))
        except mupdf.FzErrorBase:  # judged where it runs
            return False

    def type3(self, resources: mupdf.PdfObj) -> bool:
        """`resources` name a Type3 font (each font object looked at once a page)."""
        fonts = mupdf.pdf_dict_get(resources, mupdf.PDF_ENUM_NAME_Font)
        for i in range(mupdf.pdf_dict_len(fonts)):
            font = mupdf.pdf_dict_get_val(fonts, i)
            number = mupdf.pdf_to_num(font)
            known = self.type3_fonts.get(number) if number else None
            if known is None:
                subtype = mupdf.pdf_dict_get(font, mupdf.PDF_ENUM_NAME_Subtype)
                known = bool(mupdf.pdf_name_eq(subtype, mupdf.PDF_ENUM_NAME_Type3))
                if number:
                    self.type3_fonts[number] = known
            if known:
                return True
        return False


def drawn_widget(obj: mupdf.PdfObj) -> bool:
    """False for a widget annotation MuPDF's renderer never draws: one without a field type
    (/FT) or a field name (/T), itself or inherited from its parent fields; True otherwise."""
    subtype = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Subtype)
    if not mupdf.pdf_name_eq(subtype, mupdf.PDF_ENUM_NAME_Widget):
        return True
    return all(
        mupdf.pdf_dict_get_inheritable(obj, key).m_internal
        for key in (mupdf.PDF_ENUM_NAME_FT, mupdf.PDF_ENUM_NAME_T)
    )

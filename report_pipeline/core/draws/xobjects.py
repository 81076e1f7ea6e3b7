"""Image and form XObjects, and inline images, as a page draws them: each image draw is a
record, each form runs its content.

An image is a paint: under a soft mask it runs the mask first (unless it has a mask of its own:
MuPDF then skips the soft mask), and a stencil mask paints with the fill, a pattern's too
(`paints`). A form runs with a copy of the graphics state; a transparency group paints once
under the soft mask, and its content runs without it. An XObject drawn by `Do` whose own /OC is
off draws hidden (`visibility`); an annotation's appearance is no `Do`. An image XObject that
is not a stream (a dictionary without data, direct or by reference) draws nothing: MuPDF's
renderer cannot load it ("object is not a stream") and moves on to the next operator, so it is
no record, and no mask runs for it. A form, pattern, soft-mask group or glyph procedure that is
not a stream runs nothing either (`drawn.DrawFinder.run`). A mixin for `drawn.DrawFinder`,
which provides `_lookup`, `_record` and `run`.
"""

from __future__ import annotations

from dataclasses import replace

from pymupdf import mupdf

from report_pipeline.core.draws import tiles
from report_pipeline.core.draws.callbacks import guarded


class XObjects:
    @guarded
    def op_Do_image(self, ctx, name, image) -> None:
        obj = self._lookup("XObject", name)
        if obj is None or not mupdf.pdf_is_stream(obj):  # MuPDF cannot load it: nothing drawn
            return
        own_mask = mupdf.pdf_is_dict(
            mupdf.pdf_dict_geta(obj, mupdf.PDF_ENUM_NAME_SMask, mupdf.PDF_ENUM_NAME_Mask)
        )
        stencil = mupdf.pdf_dict_get_bool(obj, mupdf.PDF_ENUM_NAME_ImageMask)
        if self.jbig2_globals_fail(obj):  # MuPDF raises out of the page loading it
            self.abort_page("MuPDF stops drawing the page at an image whose JBIG2 globals it "
                            "cannot decode")  # fmt: skip
            return
        with self.hidden_as(self.hidden_with(obj)):
            self._image("xobject", mupdf.pdf_to_num(obj), None, own_mask, stencil)

    def jbig2_globals_fail(self, obj: mupdf.PdfObj) -> bool:
        """Whether MuPDF fails to load image `obj`'s /JBIG2Globals here: loading the image,
        MuPDF decodes them (`pdf_load_jbig2_globals`), and globals it cannot decode raise out
        of the page's run, so nothing from there on is drawn. It loads an image drawn in
        marked content that is off, but not one whose own /OC is off, nor anything in a form
        whose own /OC is off or in an annotation a viewer hides (it never runs them). Each
        globals stream is decoded once a walk."""
        if self.hiding or self.off(mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_OC)):
            return False
        return not self._jbig2_globals_load(obj)

    def _jbig2_globals_load(self, obj: mupdf.PdfObj) -> bool:
        """Whether MuPDF decodes image `obj`'s /JBIG2Globals (True when it has none)."""
        filters = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_Filter)
        parms = mupdf.pdf_dict_get(obj, mupdf.PDF_ENUM_NAME_DecodeParms)
        if mupdf.pdf_is_array(filters):  # the image codec is the last filter
            last = mupdf.pdf_array_len(filters) - 1
            filters = mupdf.pdf_array_get(filters, last)
            parms = mupdf.pdf_array_get(parms, last) if mupdf.pdf_is_array(parms) else parms
        if mupdf.pdf_to_name(filters) != "JBIG2Decode":
            return True
        found = mupdf.pdf_dict_get(parms, mupdf.PDF_ENUM_NAME_JBIG2Globals)
        if not mupdf.pdf_is_stream(found):
            return True
        number = mupdf.pdf_to_num(found)
        if number not in self.jbig2_globals:
            try:
                mupdf.fz_load_jbig2_globals(mupdf.pdf_load_stream(found))
                self.jbig2_globals[number] = True
            except mupdf.FzErrorBase:
                self.jbig2_globals[number] = False
        return self.jbig2_globals[number]

    @guarded
    def op_BI(self, ctx, image, colorspace_name) -> None:
        inline = mupdf.FzImage(mupdf.ll_fz_keep_image(image))
        self._image("inline", 0, inline, False, bool(inline.m_internal.imagemask))

    def _image(self, kind: str, xref: int, inline, own_mask: bool, stencil: bool) -> None:
        """An image paint: the soft mask first (MuPDF skips it for an image with a mask of its
        own), then the image; a stencil mask paints with the fill, a pattern's too."""
        if not own_mask:
            self.mask_paint()
        self._record(kind, xref, inline)
        if stencil:  # the mask's box: the unit square, placed by the transformation
            ctm = self.paint.ctm
            box = (
                None
                if ctm is None
                else ("box", tiles.transform_rect(tiles.UNIT, tiles.placed(ctm)))
            )
            self.pattern_paint(fill=True, stroke=False, shape=box)

    @guarded
    def op_Do_form(self, ctx, name, form) -> None:
        # no name: an annotation's appearance (pdf_process_annot), not a `Do`
        if name is not None and self._lookup("XObject", name) is None:
            return  # found only past a Type3 glyph's own resources: MuPDF's renderer runs none
        self.form(mupdf.PdfObj(mupdf.ll_pdf_keep_obj(form)), appearance=name is None)

    def form(self, form: mupdf.PdfObj, appearance: bool = False) -> None:
        """A form runs with a copy of the graphics state; a transparency group paints once
        under the soft mask, and its content runs without it. Its own /OC hides it at a `Do`
        only: MuPDF's renderer draws an annotation's `appearance` whatever its /OC says."""
        with self.hidden_as(self.hidden if appearance else self.hidden_with(form)):
            paint = None
            if mupdf.pdf_xobject_transparency(form):
                self.mask_paint()
                paint = replace(self.paint, softmask=None)
            self.run("form", form, None, paint)

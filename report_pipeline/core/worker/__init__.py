"""The worker: PDF reading, the page walk, validation, normalization, confined decoders, planning,
and completing a plan's missing tasks. It holds the image-decoding stack (PyMuPDF, Pillow,
libmagic); intake opens PDFs with PyMuPDF too (intake.py, page_tree.py) to inspect and count
pages, and the review decodes evidence through it (review/confined.py)."""

"""The worker: PDF reading, the page walk, validation, normalization, confined decoders, planning,
and completing a plan's missing tasks (the only part that imports PyMuPDF, Pillow and libmagic)."""

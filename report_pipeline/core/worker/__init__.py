"""The worker: PDF reading, validation, normalization, confined decoders, private workdirs and
planning (the only part that imports PyMuPDF, Pillow and libmagic)."""

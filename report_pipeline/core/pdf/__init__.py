"""Reading a PDF's pages and finding every image they draw (PyMuPDF): the page walk's
interpreter (drawn.py) and what it follows (forms, patterns, soft masks, Type 3 glyphs,
annotations, optional content), damaged content streams, and reopening a file to bound memory.
Decodes nothing; validate/ does."""

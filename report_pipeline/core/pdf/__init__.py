"""Reading a PDF with PyMuPDF: opening it, listing the images a page draws as `ImageRef`s
(pages.py, from draws/), and reopening a file to bound memory page by page (reopening.py)."""

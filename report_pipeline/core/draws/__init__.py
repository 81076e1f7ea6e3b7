"""Finding every image a page draws, without decoding any: the walk's content interpreter
(drawn.py) and what it follows (forms, patterns and their cells, soft masks, Type 3 glyphs,
annotations, optional content), and content streams that broke off or were repaired."""

"""One image from its stream to a verdict: the checks before any decode (size, signature vs
declared type, header dimensions, pixel cap), the decode, normalization to a PNG of pixels only,
and the quarantine reasons. `per_image.process_image` runs them in order."""

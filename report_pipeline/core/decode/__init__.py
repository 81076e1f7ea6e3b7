"""The confined decoder pool: pages handed to forked children (sandbox/), each decoding its
images with validate/, so a crash, a runaway allocation or a hang costs one image, not a run."""

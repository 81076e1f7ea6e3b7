"""The archive: the store's key space (every key built and parsed here), child records and
manifests, publishing, and the per-month checks."""

"""Quarantine review: the queue of undecided quarantined images, a safe look at one, and a
reviewer's decision, which publishes a new revision of the month (no Dagster here)."""

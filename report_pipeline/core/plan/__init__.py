"""The plan of a report revision: the planning walk that finds every page's draws in a confined
child (walk.py), how pages are grouped into tasks (sizing.py), and the plan record that staging
writes once and every later step reads (record.py, store.py)."""

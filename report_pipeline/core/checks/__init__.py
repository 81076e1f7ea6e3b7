"""The checks' logic, free of Dagster: per-month checks on a manifest and the whole-archive
retention audits. Figures in, a `CheckOutcome` out."""

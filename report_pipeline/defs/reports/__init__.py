"""A month's report: the asset graph (stage, extract, archive, publish), its per-month checks
and table, the job, the intake sensor, the overdue and dead-run sensors."""

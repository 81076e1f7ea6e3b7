"""Intake: report sources (local inbox, S3 prefix), authorization and limits, the page-tree
check, the idempotency key (report id + revision), submission, the sensor's cursor and the run
claims."""

"""Retention: the two clocks, the deadline index, the janitor, the audit stream and the audits.
Imports no PDF stack (report_pipeline_tests/core/test_settings.py checks)."""

"""Retention: the deadline index, the janitor and the deletion log. Imports no PDF stack
(report_pipeline_tests/core/test_settings.py checks)."""

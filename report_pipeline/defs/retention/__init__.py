"""Retention: the janitor (image_archive), the whole-archive checks, their jobs and schedules."""

"""The walk-split experiment's plumbing (bench/experiments/walk_split.py), so it does not rot:
one round on a small fixture runs both Dagster runs (the walk in one child and split), which
agree, and writes its record."""

import json

import pytest

from bench.experiments import walk_split
from report_pipeline.core.plan import walk
from report_pipeline_tests.conftest import fixture_pdf

pytestmark = pytest.mark.live  # every bench test is (conftest.LIVE_FOLDERS)


def test_one_round_runs_both_ways_and_leaves_the_walk_as_it_was(tmp_path, capsys):
    pdf = str(fixture_pdf("repeated_image.pdf"))
    assert walk_split.main([pdf, "--rounds", "1", "--out", str(tmp_path)]) == 0
    assert walk._children is walk_split.SPLIT
    assert "split_over_one" in capsys.readouterr().out
    (record,) = tmp_path.glob("walk-split-*.json")
    (round_,) = json.loads(record.read_text())["rounds"]
    assert round_["one"]["counts"] == round_["split"]["counts"]

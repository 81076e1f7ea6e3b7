"""The janitor benchmark's synthetic state is what the pipeline writes today: built small, one
pass deletes exactly the due items and a second pass nothing (the checks `make bench` runs)."""

from pathlib import Path

import pytest

from bench.janitor_state import Spread, build, check_first, check_second
from report_pipeline.core.model.clock import utc_now
from report_pipeline.core.model.settings import RetentionPolicy
from report_pipeline.core.retention import janitor

pytestmark = pytest.mark.live


def test_a_small_janitor_state_sweeps_exactly_its_due_items(tmp_path: Path):
    now, policy = utc_now(), RetentionPolicy()
    state = build(tmp_path, (20, 10, 0.5), now, Spread(), policy, seed=7)
    check_first(state, janitor.run(state.store, tmp_path / "work", now, policy))
    check_second(janitor.run(state.store, tmp_path / "work", now, policy))

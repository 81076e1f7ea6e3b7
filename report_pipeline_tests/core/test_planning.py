import re

import pytest

from report_pipeline.core.worker.planning import group_pages


def covers(groups, pages):
    flat = [p for g in groups for p in range(g.first_page, g.last_page + 1)]
    return flat == list(range(1, pages + 1))


def test_one_task_per_page_names_pages():
    groups = group_pages([(1, 10)] * 3, pages_per_task=1)
    assert [g.key for g in groups] == ["page_0001", "page_0002", "page_0003"]


@pytest.mark.parametrize("pages_per_task", [2, 7, 200])
def test_fixed_groups_cover_every_page_once(pages_per_task):
    groups = group_pages([(2, 1000)] * 140, pages_per_task=pages_per_task)
    assert covers(groups, 140)
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", g.key) for g in groups)


def test_automatic_grouping_follows_estimated_work():
    light = group_pages([(3, 300_000)] * 140)
    heavy = group_pages([(3, 40_000_000)] * 140)
    assert len(light) == 1 and light[0].key == "pages_0001_0140" and light[0].images == 420
    assert 10 < len(heavy) < 140 and covers(heavy, 140)


def test_pages_without_images_still_belong_to_a_task():
    groups = group_pages([(0, 0)] * 5, pages_per_task=2)
    assert covers(groups, 5) and sum(g.images for g in groups) == 0

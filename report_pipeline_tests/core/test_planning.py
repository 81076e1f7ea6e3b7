import re

import pytest

from report_pipeline.core.plan.sizing import group_pages


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


def test_automatic_groups_share_the_work_evenly():
    """1.2 targets of work make two groups of ~0.6, not one full group and a scrap."""
    pages = [(1, 900_000)] * 120  # 1.0 unit a page
    halves = group_pages(pages, target_units=100)
    assert [g.last_page - g.first_page + 1 for g in halves] == [60, 60]
    assert len(group_pages(pages, target_units=120)) == 1
    assert len(group_pages(pages, target_units=119)) == 2
    uneven = [(1, 900_000)] * 60 + [(1, 9_900_000)] * 10  # 60 + 100 units: 80 each
    groups = group_pages(uneven, target_units=100)
    assert [(g.first_page, g.last_page) for g in groups] == [(1, 62), (63, 70)]
    assert covers(group_pages(uneven, target_units=7), 70)


def test_celery_tasks_are_sized_larger_than_in_process_ones():
    from report_pipeline.core.model.settings import TARGET_UNITS, TaskSizing

    assert TaskSizing.for_executor("in_process") == TaskSizing()
    assert TaskSizing.for_executor("celery").target_units == TARGET_UNITS["celery"]
    assert TARGET_UNITS["k8s"] > TARGET_UNITS["celery"] > TARGET_UNITS["in_process"]
    with pytest.raises(ValueError, match="no task sizing for executor 'multiprocess'"):
        TaskSizing.for_executor("multiprocess")

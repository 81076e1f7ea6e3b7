"""The UI's main flows in a real browser (Debian's chromium, headless, driven by Playwright)
against `make dev` (`dagster dev` on a free port, operate/devserver.py) with the fixture report in
the inbox:
launch one month from the asset page, see its run succeed, its checks pass, and the sensor and
both schedules running. Each step leaves a screenshot in the test's tmp folder."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from report_pipeline_tests.intake.live import SENSOR, LiveDagster, place, wait_for
from report_pipeline_tests.operate.devserver import make_dev

pytestmark = pytest.mark.live

MONTH = "2026-10"  # the inbox folder that holds the fixture, and the partition launched
ASSET = "report_manifest"
MONTH_CHECKS = ["manifest_complete", "archive_matches_manifest"]
AUTOMATIONS = ["new_report_sensor", "cleanup_schedule", "retention_audit_schedule"]
RUN_TIMEOUT_MS = 60_000  # a launched run: dequeue, a run worker importing the code, ~2 s of work


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveDagster]:
    """`make dev` on a fresh instance and an empty inbox; the sensor is switched off before the
    fixture goes into `inbox/<MONTH>/`, so the UI launch is the month's only run. The test turns
    the sensor back on from the UI."""
    with make_dev(tmp_path / "dagster", report=None) as server:
        server.set_sensor(running=False)
        place(server.root, "monthly_report.pdf", MONTH, "monthly_report.pdf")
        yield server


def test_launch_a_month_and_see_its_run_checks_and_automations(
    live: LiveDagster, page: Page, tmp_path: Path
) -> None:
    shots: list[Path] = []

    def shot(name: str) -> None:
        shots.append(tmp_path / f"{len(shots) + 1:02d}_{name}.png")
        page.screenshot(path=shots[-1])
        print(f"screenshot: {shots[-1]}")

    # 1. First visit on a fresh instance: the community pop-up, dismissed with "Skip".
    first_visit = live.graphql("{ shouldShowNux }")["shouldShowNux"]
    page.goto(f"{live.url}/assets/{ASSET}")
    materialize = page.get_by_role("button", name=re.compile(r"Materialize…$"))
    if first_visit:
        skip = page.get_by_role("button", name="Skip", exact=True)
        expect(page.get_by_text("Join the Dagster community")).to_be_visible()
        shot("community_popup")
        skip.click()
        expect(skip).to_be_hidden()
    expect(materialize).to_be_enabled()
    shot("asset_page")

    # 2. Materialize → one partition, typed into the dialog's partition selection.
    materialize.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_text(f"Launch runs to materialize {ASSET}")).to_be_visible()
    partitions = dialog.get_by_placeholder(re.compile(r"^ex: "))
    partitions.fill(MONTH)
    partitions.press("Enter")
    expect(dialog.get_by_text("1 partition", exact=True)).to_be_visible()
    launch = dialog.get_by_role("button", name="Launch 1 run", exact=True)
    expect(launch).to_be_enabled()
    shot("launch_dialog")
    launch.click()
    notifications = page.get_by_role("region", name=re.compile(r"^Notifications"))
    toast = notifications.get_by_role("listitem").filter(has_text="Launched run ")
    toast.get_by_role("link", name="View", exact=True).click()
    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}"))
    run_id = page.url.split("/runs/")[1].split("?")[0]
    status = page.get_by_text(re.compile(r"^(Success|Failure|Canceled)$"))
    expect(status).to_be_visible(timeout=RUN_TIMEOUT_MS)
    shot("run_page")
    expect(status).to_have_text("Success")
    expect(page.get_by_text(f"partition: {MONTH}", exact=True)).to_be_visible()
    runs = live.runs({"dagster/partition": MONTH})
    assert [(r["id"], r["status"]) for r in runs] == [(run_id, "SUCCESS")], runs

    # 3. The asset's Checks tab: the month's checks, evaluated by this run, passed for MONTH.
    page.goto(f"{live.url}/assets/{ASSET}")
    page.get_by_role("tab", name="Checks", exact=True).click()
    for name in MONTH_CHECKS:
        page.get_by_text(name, exact=True).first.click()
        expect(page).to_have_url(re.compile(rf"checkDetail={name}(&|$)"))
        latest = _latest_execution(page)
        expect(_field(latest, "Evaluation result")).to_contain_text("Passed")
        target = _field(latest, "Target materialization").get_by_role("link")
        expect(target).to_have_attribute("href", re.compile(rf"/runs/{run_id}"))
        shot(f"check_{name}")
        # The per-month scope: the evaluation is recorded on this month's partition. Needs the
        # partition-scoped check specs on report_manifest; the old unpartitioned checks show "—".
        expect(_field(latest, "Partition")).to_contain_text(MONTH)

    # 4. Automation: both schedules running; the sensor, off since the fixture started, is
    #    switched on with its toggle (the month now has its run: the sensor starts no other).
    navigation = page.get_by_role("navigation")
    navigation.get_by_role("link", name=re.compile(r"\bAutomation$")).click()
    expect(page).to_have_url(re.compile(r"/automation"))
    sensor = _automation_toggle(page, "new_report_sensor")
    expect(sensor).to_be_enabled()
    expect(sensor).not_to_be_checked()
    sensor.locator("xpath=ancestor::label[1]").click()  # the drawn switch; the input is hidden
    for name in AUTOMATIONS:  # enabled: not the switch's pending state while it saves
        expect(_automation_toggle(page, name)).to_be_checked()
        expect(_automation_toggle(page, name)).to_be_enabled()
    shot("automation")
    running = {name: "RUNNING" for name in AUTOMATIONS}
    wait_for(
        lambda: {name: _automation_status(live).get(name) for name in AUTOMATIONS} == running,
        f"the instance to record {running}",
        10,
    )


def _latest_execution(page: Page) -> Locator:
    """The row of fields under a check's "Latest execution"."""
    fields = page.locator("div").filter(has=page.get_by_text("Evaluation result", exact=True))
    return fields.filter(has=page.get_by_text("Partition", exact=True)).last


def _field(row: Locator, label: str) -> Locator:
    """The innermost block holding a field's label: the label and its value."""
    return row.locator("div").filter(has=row.page.get_by_text(label, exact=True)).last


def _automation_toggle(page: Page, name: str) -> Locator:
    """A sensor's or schedule's on/off switch on Automation. Its row is the nearest block
    around its name that holds checkboxes: first the row's selection box (bulk actions), then,
    once the row's state has loaded, its switch."""
    name_text = page.get_by_text(name, exact=True).first
    row = name_text.locator("xpath=ancestor::div[.//input[@type='checkbox']][1]")
    boxes = row.get_by_role("checkbox")
    expect(boxes).to_have_count(2)
    return boxes.nth(1)


def _automation_status(live: LiveDagster) -> dict[str, str]:
    """Every schedule's and sensor's status, as the instance records it."""
    query = """query($r: RepositorySelector!) { repositoryOrError(repositorySelector: $r) {
        ... on Repository { schedules { name scheduleState { status } }
                            sensors { name sensorState { status } } } } }"""
    selector = {key: SENSOR[key] for key in ("repositoryLocationName", "repositoryName")}
    repository = live.graphql(query, {"r": selector})["repositoryOrError"]
    return {
        **{s["name"]: s["scheduleState"]["status"] for s in repository["schedules"]},
        **{s["name"]: s["sensorState"]["status"] for s in repository["sensors"]},
    }

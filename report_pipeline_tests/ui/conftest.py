"""The browser the UI tests drive: Debian's chromium, headless, through Playwright (never
`playwright install`), and a page with the UI's slow polling allowed for; screenshots by name."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright


@pytest.fixture
def browser() -> Iterator[Browser]:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(chromium).exists(), "needs Debian's chromium: run `bash .ci/system-packages`"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(30_000)
    expect.set_options(timeout=30_000)  # the UI polls; a loaded 2-core machine is slow
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def shot(page: Page, tmp_path: Path) -> Callable[[str], Path]:
    """Save a numbered screenshot of the page in the test's tmp folder (its path is printed)."""
    taken: list[Path] = []

    def take(name: str) -> Path:
        taken.append(tmp_path / f"{len(taken) + 1:02d}_{name}.png")
        page.screenshot(path=taken[-1])
        print(f"screenshot: {taken[-1]}")
        return taken[-1]

    return take

"""Fixtures for the viewer tests: executions driven by the real `tether` command."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from viewer.driver import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, EXAMPLES, ViewServer, answer, tether


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    return folder


@pytest.fixture
def hello(runs: Path) -> Path:
    """hello-world started, the protocol accepted and the time of day written and submitted."""
    run = runs / "hello.json"
    tether("start", EXAMPLES / "hello-world.yaml", run)
    answer(run, "submit", "success")
    answer(run, "var", "time_of_day", "evening")
    answer(run, "submit", "success", "--note", "it is 19:00")
    return run


@pytest.fixture
def server(runs: Path) -> Iterator[ViewServer]:
    """`tether view` serving the `runs` folder."""
    view = ViewServer(runs)
    yield view
    assert view.stop() == 0


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's chromium driven by Playwright (installed by scripts/install-test-deps-viewer)."""
    assert os.path.exists(CHROMIUM), "run scripts/install-test-deps-viewer to install chromium"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _page(browser: Browser, width: int, height: int) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], "the page raised errors"


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page in a desktop browser window."""
    yield from _page(browser, 1400, 1000)


@pytest.fixture
def narrow_page(browser: Browser) -> Iterator[Page]:
    """A page 420 pixels wide, as on a phone."""
    yield from _page(browser, 420, 900)

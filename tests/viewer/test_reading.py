"""The viewer read as a user reads it, in a real browser: a finished execution reads 100%, a tree
that mixes actions with a loop, a parallel and a selector opens with its labels legible (1280 and
420 pixels wide), a fork says where it came from, the list pages and filters, and the overview
tells a selector's planned fallback from a failure. The screenshots of the docs are taken here
(`scripts/docs-screenshots` copies them into docs/)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, Route, expect

from tether.verbs import Runtime
from viewer.driver import ARTIFACTS, EXAMPLES, ViewServer, answer, tether

# A release: one action, a loop over packages, a parallel of three, a selector of three, one
# action: ten actions, ten leaves in a row.
MIXED_YAML = """\
name: release-train
version: 1
description: Plan a release, build and smoke-test each package, verify it three ways at once,
  publish by the first channel that works, then announce it.
state:
  var:
    packages: []
    channel: null
tree:
  type: sequence
  name: Release_Train
  children:
    - type: action
      name: Plan_Release
      steps:
        - instruct: List the packages to release. Store them at $VAR.packages.
          writes: [packages]
        - check: size($VAR.packages) > 0
    - type: sequence
      name: Build_Each
      for_each: {in: $VAR.packages, as: package, max: 10}
      children:
        - type: action
          name: Build_Package
          steps:
            - instruct: Build $ITEM.
        - type: action
          name: Smoke_Test
          steps:
            - evaluate: $ITEM starts and answers its health check.
    - type: parallel
      name: Verify
      policy: all
      children:
        - type: action
          name: Unit_Tests
          steps:
            - instruct: Run the unit tests.
        - type: action
          name: Integration_Tests
          steps:
            - instruct: Run the integration tests.
        - type: action
          name: Security_Scan
          steps:
            - instruct: Scan the dependencies for known vulnerabilities.
    - type: selector
      name: Publish
      children:
        - type: action
          name: Fast_Lane
          steps:
            - evaluate: The fast lane is open today.
        - type: action
          name: Staged_Rollout
          steps:
            - instruct: Publish to a tenth of the users, then to all.
        - type: action
          name: Ask_Release_Manager
          steps:
            - instruct: Ask the release manager to publish by hand.
    - type: action
      name: Announce
      steps:
        - instruct: Announce the release.
"""
NAME_PX = 12  # the least height of a node's name on the screen: about 10.5-pixel type


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    tree = tmp_path / "release-train.yaml"
    tree.write_text(MIXED_YAML)
    return tree


def _token(run: Path, name: str) -> str:
    (request,) = [r for r in answer(run, "next", "--all") if r["name"] == name]
    return str(request["step"])


def _to_verify(tree: Path, run: Path) -> None:
    """Started, planned and both packages built and smoke-tested: Verify's three are open."""
    tether("start", tree, run)
    answer(run, "submit", "success")
    answer(run, "submit", "success", "--set", 'packages=["api", "web"]')
    for _ in ("api", "web"):
        answer(run, "submit", "success")
        answer(run, "eval", "true")


def _to_announce(tree: Path, run: Path) -> None:
    """Verified, the fast lane closed (the selector falls back) and the rollout done."""
    _to_verify(tree, run)
    for name in ("Unit_Tests", "Integration_Tests", "Security_Scan"):
        answer(run, "submit", "success", "--step", _token(run, name))
    answer(run, "eval", "false", "--note", "the fast lane is closed on Fridays")
    answer(run, "submit", "success")


def _finished(tree: Path, run: Path) -> None:
    _to_announce(tree, run)
    answer(run, "submit", "success")
    assert answer(run, "get")["status"] == "complete"


def test_a_finished_execution_reads_100_percent(
    page: Page, server: ViewServer, runs: Path, mixed: Path
) -> None:
    done, almost = runs / "done.json", runs / "almost.json"
    _finished(mixed, done)
    _to_announce(mixed, almost)
    _, listing = server.get("/api/runs")
    rows = {row["path"]: row for row in listing["runs"]}
    # Ask_Release_Manager never runs once Publish succeeded: settled, as is everything once done.
    assert rows["done.json"]["progress"] == {"settled": 10, "actions": 10}
    assert rows["almost.json"]["progress"] == {"settled": 9, "actions": 10}

    page.goto(server.base)
    done_row = page.locator('#runs tr[data-path="done.json"] td.progress')
    expect(done_row).to_have_text("10/10")
    expect(done_row.locator(".bar-fill")).to_have_attribute("style", "width:100%")
    expect(page.locator('#runs tr[data-path="almost.json"] td.progress')).to_have_text("9/10")
    page.locator("#list-view").screenshot(path=ARTIFACTS / "progress-list.png")
    page.locator("#runs a", has_text="done.json").click()
    expect(page.locator("#run-facts")).to_contain_text("10/10 actions")
    expect(page.locator('#side-runs li[data-path="done.json"]')).to_contain_text("10/10")
    expect(page.locator("#run-banner")).to_have_text("The workflow is done.")
    expect(page.locator("#live")).to_have_text("live")
    page.screenshot(path=ARTIFACTS / "finished.png")


def _page(browser: Browser, width: int, height: int) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": width, "height": height})
    yield context.new_page()
    context.close()


def _name_heights(page: Page) -> dict[str, float]:
    """The height on the screen of each node's name that is in the diagram's frame."""
    heights: dict[str, float] = page.evaluate(
        """() => {
          const frame = document.querySelector("#diagram").getBoundingClientRect();
          const out = {};
          for (const text of document.querySelectorAll("#diagram g.node text.name")) {
            const box = text.getBoundingClientRect();
            const inside = box.left >= frame.left && box.right <= frame.right
              && box.top >= frame.top && box.bottom <= frame.bottom;
            if (inside) out[text.textContent] = box.height;
          }
          return out;
        }"""
    )
    return heights


def _whole_in_frame(page: Page, box: Locator) -> bool:
    frame, inner = page.locator("#diagram").bounding_box(), box.bounding_box()
    assert frame is not None and inner is not None
    return (
        inner["x"] >= frame["x"] - 1
        and inner["y"] >= frame["y"] - 1
        and inner["x"] + inner["width"] <= frame["x"] + frame["width"] + 1
        and inner["y"] + inner["height"] <= frame["y"] + frame["height"] + 1
    )


@pytest.mark.parametrize("width", [1280, 420])
def test_a_mixed_tree_opens_legible(
    browser: Browser, server: ViewServer, runs: Path, mixed: Path, width: int
) -> None:
    run = runs / "release.json"
    _to_verify(mixed, run)
    for page in _page(browser, width, 900):
        page.goto(server.base + "?run=release.json")
        expect(page.locator("#diagram g.node")).to_have_count(14)
        expect(page.locator("#diagram g.node.cursor")).to_have_count(3)
        expect(page.locator("#live")).to_have_text("live")
        heights = _name_heights(page)
        assert heights, "some of the tree is in the frame"
        assert min(heights.values()) >= NAME_PX, heights
        cursor = page.locator("#diagram g.node.cursor rect.box").first
        assert _whole_in_frame(page, cursor), "the cursor is in view"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=ARTIFACTS / f"mixed-{width}.png")
        # The rest is a scroll away; "Fit" shows the tree no smaller.
        before = cursor.bounding_box()
        assert before is not None
        page.locator("#diagram").hover()
        page.mouse.wheel(120, 0)
        after = cursor.bounding_box()
        assert after is not None and after["x"] < before["x"] - 50, "the tree scrolls"
        page.locator("#zoom-fit").click()
        assert min(_name_heights(page).values()) >= NAME_PX


def test_a_fork_says_where_it_came_from(
    page: Page, server: ViewServer, runs: Path, mixed: Path, tmp_path: Path
) -> None:
    source = runs / "release.json"
    _finished(mixed, source)
    tether("fork", source, runs / "retry.json", "--at", "12")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _finished(mixed, elsewhere / "away.json")
    tether("fork", elsewhere / "away.json", runs / "from-away.json", "--at", "2")

    page.goto(server.base + "?run=from-away.json")
    origin = page.locator("#run-origin")
    expect(origin).to_contain_text("after entry 2 (elsewhere: not in this place)")
    expect(origin.locator("code")).to_contain_text("away.json")
    expect(origin.locator("a")).to_have_count(0)
    page.locator("#side-runs a", has_text="retry.json").click()
    expect(origin).to_have_text("Forked from release.json after entry 12")
    origin.locator("a").click()
    expect(page.locator("#position")).to_contain_text("after entry 12 of")
    expect(page.locator("#run-origin")).to_be_hidden()
    _, doc = server.get("/api/run?path=retry.json")
    assert doc["forked_from"]["path"] == "release.json" and doc["forked_from"]["at"] == 12


def test_the_listing_pages_and_filters(server: ViewServer, runs: Path) -> None:
    runtime = Runtime()
    for i in range(5):
        runtime.start(str(EXAMPLES / "hello-world.yaml"), str(runs / f"h{i}.json"))
    tether("start", EXAMPLES / "code-review.yaml", runs / "review.json")
    _, page = server.get("/api/runs?limit=2&offset=1")
    assert [r["path"] for r in page["runs"]] == ["h1.json", "h2.json"]
    assert (page["total"], page["offset"], page["limit"]) == (6, 1, 2)
    assert page["trees"] == ["Code_Review", "hello-world"]
    _, page = server.get("/api/runs?tree=Code_Review")
    assert [r["path"] for r in page["runs"]] == ["review.json"] and page["total"] == 1
    _, page = server.get("/api/runs?status=complete")
    assert (page["runs"], page["total"]) == ([], 0)
    _, page = server.get("/api/runs?offset=40")
    assert (page["runs"], page["total"]) == ([], 6)
    for query, word in (("limit=0", "limit"), ("limit=501", "limit"), ("offset=-1", "offset")):
        status, body = server.get(f"/api/runs?{query}")
        assert (status, body["error"]["code"]) == (400, "usage"), query
        assert word in body["error"]["message"]
    status, body = server.get("/api/runs?status=done")
    assert (status, body["error"]["code"]) == (400, "usage")
    assert "running, complete, failed" in body["error"]["message"]


def test_the_list_page_and_the_side_list_load_a_page(
    page: Page, server: ViewServer, runs: Path, mixed: Path
) -> None:
    runtime = Runtime()
    for i in range(52):
        runtime.start(str(EXAMPLES / "hello-world.yaml"), str(runs / f"h{i:02d}.json"))
    _finished(mixed, runs / "release.json")

    page.goto(server.base)
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(50)
    expect(page.locator("#page-range")).to_have_text("1–50 of 53")
    expect(page.locator("#page-back")).to_be_disabled()
    page.locator("#page-next").click()
    expect(rows).to_have_count(3)
    expect(page.locator("#page-range")).to_have_text("51–53 of 53")
    expect(page.locator("#page-next")).to_be_disabled()
    page.select_option("#filter-status", "complete")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("release.json")
    assert "status=complete" in page.url and "offset" not in page.url
    page.select_option("#filter-status", "failed")
    expect(rows).to_have_count(0)
    expect(page.locator("#no-match")).to_be_visible()
    expect(page.locator("#no-runs")).to_be_hidden()
    # The answer to "all" arrives after the answer to "release-train": the page keeps the latest.
    held: list[Route] = []

    def hold_all(route: Route) -> None:
        if "tree=" in route.request.url or "status=" in route.request.url:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/runs?*", hold_all)
    page.select_option("#filter-status", "")
    page.select_option("#filter-tree", "release-train")
    expect(rows).to_have_count(1)
    assert held, "the page asked for every execution before asking for release-train's"
    answered_all = """() => performance.getEntriesByType("resource").filter((entry) =>
        entry.name.includes("/api/runs?") && !/tree=|status=/.test(entry.name)).length"""
    before = page.evaluate(answered_all)
    for route in held:
        route.continue_()
    page.unroute("**/api/runs?*")
    page.wait_for_function(f"() => ({answered_all})() > {before}")
    page.evaluate("() => new Promise((done) => setTimeout(done))")  # its handler has run
    expect(rows).to_have_count(1)
    expect(page.locator("#page-range")).to_have_text("1–1 of 1")
    page.reload()
    expect(page.locator("#filter-tree")).to_have_value("release-train")
    expect(rows).to_have_count(1)

    page.goto(server.base + "?run=h00.json")
    side = page.locator("#side-runs li")
    expect(side).to_have_count(50)
    expect(page.locator("#side-count")).to_have_text("50 of 53")
    page.locator("#side-more-button").click()
    expect(side).to_have_count(53)
    expect(page.locator("#side-more")).to_be_hidden()


def test_the_overview_tells_a_fallback_from_a_failure(
    page: Page, server: ViewServer, runs: Path, mixed: Path
) -> None:
    _finished(mixed, runs / "done.json")  # Fast_Lane judged false: Publish tried the next
    failed = runs / "failed.json"
    tether("start", mixed, failed)
    answer(failed, "submit", "success")
    answer(failed, "submit", "success", "--set", "packages=[]")  # its check is false
    assert answer(failed, "get")["status"] == "failed"

    page.goto(server.base + "?overview")
    card = page.locator('.tree-card[data-tree="release-train"]')
    plan = card.locator('tr[data-path="0"] td').nth(3)
    expect(plan).to_have_text("1")
    expect(plan).to_have_class("hot")
    fast = card.locator('tr[data-path="3.0"] td').nth(3)
    expect(fast).to_have_text("1 fallback")
    expect(fast).to_have_class("fallback")
    assert page.evaluate(
        "getComputedStyle(document.querySelector('.tree-card tr[data-path=\"3.0\"] td.fallback'))"
        ".color"
    ) != page.evaluate("getComputedStyle(document.querySelector('td.hot')).color")
    checks = card.locator(".checks")
    expect(checks.locator("h3")).to_have_text(
        "Checks that said no most: failed an attempt or refused a close"
    )
    expect(checks.locator("li")).to_have_text(
        "1 Plan_Release: size($VAR.packages) > 0 (failed an attempt 1, refused a close 0)"
    )
    card.locator(".to-heat").click()
    fast = page.locator('#heat-diagram g.node[data-key="3.0"]')
    expect(fast).to_have_class(re.compile(r"\bfallback\b"))
    expect(fast.locator(".meta")).to_have_text("1 of 1 failed: a fallback")
    plan = page.locator('#heat-diagram g.node[data-key="0"]')
    expect(plan).not_to_have_class(re.compile(r"\bfallback\b"))
    expect(plan.locator(".meta")).to_have_text("1 of 2 attempts failed")

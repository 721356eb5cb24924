"""The viewer across executions, in a real browser: the overview of a folder (the trees, their
executions by status, the per-action figures of `tether stats`) and a tree's heat map (each
action shaded by a measure, its figures on hover, a click listing the executions behind them,
each opening live). The executions are the stats scenario's, whose figures are known."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from support.postgres import shared_server
from support.stats_scenario import drive
from viewer.driver import ARTIFACTS, ViewServer


@pytest.fixture
def fleet(runs: Path, tmp_path: Path) -> Iterator[ViewServer]:
    """`tether view` over the scenario's seven executions (six of `release`, one of `tiny`)."""
    drive(str(runs), tmp_path / "project")
    view = ViewServer(runs)
    yield view
    assert view.stop() == 0


def _release(server: ViewServer) -> dict[str, Any]:
    status, doc = server.get("/api/overview")
    assert status == 200
    (tree,) = [t for t in doc["figures"]["trees"] if t["name"] == "release"]
    return dict(tree)


def test_the_overview_shows_each_tree_and_its_figures(page: Page, fleet: ViewServer) -> None:
    page.goto(fleet.base)
    page.click("#to-overview")
    expect(page).to_have_url(re.compile(r"\?overview$"))
    card = page.locator('.tree-card[data-tree="release"]')
    expect(card.locator(".statuses")).to_contain_text("2 running")
    expect(card.locator(".statuses")).to_contain_text("2 complete")
    expect(card.locator(".statuses")).to_contain_text("2 failed")
    build = card.locator('tr[data-path="0"] td')
    expect(build.nth(0)).to_have_text("Build")
    expect(build.nth(3)).to_have_text("3")  # failed attempts: b's three
    expect(build.nth(4)).to_have_text("2")  # its two retries
    expect(card.locator(".checks")).to_contain_text("$VAR.built == true")
    tiny = page.locator('.tree-card[data-tree="tiny"] .statuses')
    expect(tiny).to_contain_text("1 complete")
    expect(page.locator("#live")).to_have_text("live")
    page.screenshot(path=ARTIFACTS / "overview.png", full_page=True)


def test_the_heat_map_shades_where_agents_fail_and_lists_who_failed(
    page: Page, fleet: ViewServer
) -> None:
    page.goto(fleet.base + "?overview")
    page.locator('.tree-card[data-tree="release"] .to-heat').click()
    expect(page.locator("#heat-title")).to_have_text("release 2.1")
    build = page.locator('#heat-diagram g.node[data-key="0"]')
    review = page.locator('#heat-diagram g.node[data-key="1"]')
    # Build failed 3 of its 8 attempts, Sign_Off 1 of 3; Review never failed.
    expect(build).to_have_class(re.compile(r"\bheat-2\b"))
    expect(page.locator('#heat-diagram g.node[data-key="2"]')).to_have_class(
        re.compile(r"\bheat-2\b")
    )
    expect(review).to_have_class(re.compile(r"\bheat-0\b"))
    expect(build.locator(".meta")).to_have_text("3 of 8 attempts failed")
    assert "failed 3 · retries 2" in (build.locator("title").text_content() or "")
    build.hover()
    expect(page.locator("#heat-figures")).to_contain_text("Build")
    expect(page.locator("#heat-figures dd").nth(2)).to_have_text("3")
    build.click()
    expect(page.locator("#heat-runs li")).to_have_count(1)
    expect(page.locator("#heat-runs li")).to_contain_text("b.json")
    expect(page.locator("#heat-runs li")).to_contain_text("3 of 3 attempts failed")
    page.screenshot(path=ARTIFACTS / "heat.png")
    page.locator("#heat-runs a", has_text="b.json").click()
    expect(page).to_have_url(re.compile(r"\?run=b\.json$"))
    expect(page.locator("#run-title")).to_have_text("release 2.1")
    expect(page.locator("#live")).to_have_text("live")


def test_the_measure_selector_reshades_and_relists(page: Page, fleet: ViewServer) -> None:
    tree = _release(fleet)
    page.goto(f"{fleet.base}?heat=release&hash={tree['hash']}&measure=failures")
    page.select_option("#measure", "stops_refused")
    review = page.locator('#heat-diagram g.node[data-key="1"]')
    expect(review).to_have_class(re.compile(r"\bheat-5\b"))  # the one stop refused
    expect(page.locator('#heat-diagram g.node[data-key="0"]')).to_have_class(
        re.compile(r"\bheat-0\b")
    )
    expect(page).to_have_url(re.compile(r"measure=stops_refused"))
    review.click()
    expect(page.locator("#heat-runs li")).to_have_count(1)
    expect(page.locator("#heat-runs li")).to_contain_text("c.json")
    page.locator('#heat-diagram g.node[data-key="3"]').click()  # Close_Out: no stop refused
    expect(page.locator("#heat-runs li")).to_have_text("None.")


def test_the_heat_api_refuses_what_it_cannot_answer(fleet: ViewServer) -> None:
    tree = _release(fleet)
    status, body = fleet.get(f"/api/heat?tree=release&hash={tree['hash']}&measure=mood")
    assert (status, body["error"]["code"]) == (400, "usage")
    assert "failures" in body["error"]["message"]
    status, body = fleet.get("/api/heat?tree=release&hash=sha256:0&measure=failures")
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = fleet.get("/api/behind?tree=release&measure=failures")
    assert (status, body["error"]["code"]) == (400, "usage")
    assert "hash, key" in body["error"]["message"]
    for key in ("", "1..0", "x", "1.0%3B", "9" * 40):
        query = f"tree=release&hash={tree['hash']}&key={key}&measure=failures"
        status, body = fleet.get(f"/api/behind?{query}")
        assert (status, body["error"]["code"]) == (400, "usage"), key
    status, body = fleet.get(f"/api/behind?tree=release&hash={tree['hash']}&key=2&measure=failures")
    assert [(e["path"], e["status"]) for e in body["executions"]] == [("d.json", "failed")]
    query = f"tree=release&hash={tree['hash']}&key=0"
    status, body = fleet.get(f"/api/behind?{query}&measure=retries")
    assert [(e["path"], e["meta"]) for e in body["executions"]] == [("b.json", "2 retries used")]
    status, whole = fleet.get(f"/api/behind?{query}&measure=answer_time")
    assert whole["total"] == len(whole["executions"]) > 1
    status, page = fleet.get(f"/api/behind?{query}&measure=answer_time&limit=1&offset=1")
    assert (page["total"], page["executions"]) == (whole["total"], whole["executions"][1:2])
    status, body = fleet.get(f"/api/behind?{query}&measure=answer_time&limit=0")
    assert (status, body["error"]["code"]) == (400, "usage")
    status, body = fleet.get(f"/api/heat?tree=release&hash={tree['hash']}&measure=answer_time")
    assert re.search(r'data-key="0"[^>]*>.*?answers: median 10 s', body["svg"], re.S)
    assert re.search(r'class="[^"]*heat-0"[^>]*data-key="2"', body["svg"]), "a person's step"


def test_a_database_has_its_overview_and_heat_map(page: Page, tmp_path: Path) -> None:
    server = shared_server()
    database = f"insight_{uuid.uuid4().hex[:12]}"
    server.create_database(database)
    dsn = server.database_uri(database)
    drive(dsn, tmp_path / "project")
    view = ViewServer(dsn)
    try:
        page.goto(view.base + "?overview")
        card = page.locator('.tree-card[data-tree="release"]')
        expect(card.locator(".statuses")).to_contain_text("2 failed")
        expect(card.locator('tr[data-path="0"] td').nth(3)).to_have_text("3")
        card.locator(".to-heat").click()
        page.locator('#heat-diagram g.node[data-key="2"]').click()  # Sign_Off, rejected in d
        expect(page.locator("#heat-runs li")).to_have_count(1)
        page.locator("#heat-runs a", has_text="d").click()
        expect(page).to_have_url(re.compile(r"\?run=d\.json$"))
        expect(page.locator("#run-title")).to_have_text("release 2.1")
        expect(page.locator("#live")).to_have_text("live")
    finally:
        assert view.stop() == 0


def test_the_overview_and_heat_map_fit_a_narrow_screen(
    narrow_page: Page, fleet: ViewServer
) -> None:
    tree = _release(fleet)
    wide = "document.documentElement.scrollWidth"
    narrow_page.goto(fleet.base + "?overview")
    expect(narrow_page.locator(".tree-card")).to_have_count(2)
    assert narrow_page.evaluate(wide) <= 420, "the figures scroll inside their frame"
    narrow_page.goto(f"{fleet.base}?heat=release&hash={tree['hash']}&measure=failures")
    narrow_page.locator('#heat-diagram g.node[data-key="0"]').click()
    expect(narrow_page.locator("#heat-runs li")).to_contain_text("b.json")
    assert narrow_page.evaluate(wide) <= 420

"""The viewer page in a real browser (Debian's chromium through Playwright), served by a real
`tether view`, while the test drives the execution with the real CLI."""

from __future__ import annotations

import uuid
from pathlib import Path

from playwright.sync_api import Page, expect

from support.postgres import shared_server
from tether.verbs import Runtime
from viewer.driver import (
    ARTIFACTS,
    EXAMPLES,
    ViewServer,
    answer,
    mark_document,
    same_document,
    tether,
)


def _node(page: Page, name: str) -> str:
    """The classes of the diagram box whose name is `name`."""
    box = page.locator("#diagram g.node", has=page.locator("text.name", has_text=name))
    expect(box).to_have_count(1)
    return str(box.get_attribute("class"))


def test_listing_shows_executions_and_new_ones_appear(
    page: Page, server: ViewServer, hello: Path, runs: Path
) -> None:
    page.goto(server.url)
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("hello-world")
    expect(rows.first).to_contain_text("evaluating")
    expect(rows.first).to_contain_text("1/5")
    expect(rows.first.locator("td.open-step")).to_have_text("Morning_Greeting evaluate")
    expect(page.locator("#live")).to_have_text("live")
    mark_document(page)
    tether("start", EXAMPLES / "code-review.yaml", runs / "review.json")
    expect(rows).to_have_count(2)
    expect(page.locator("#runs tbody tr[data-path='review.json']")).to_contain_text("Code_Review")
    same_document(page)
    page.screenshot(path=ARTIFACTS / "list.png")
    page.locator("a", has_text="hello.json").click()
    expect(page.locator("#run-title")).to_have_text("hello-world 1.0.0")


def test_run_page_follows_the_agent_without_a_reload(
    page: Page, server: ViewServer, hello: Path
) -> None:
    page.goto(server.base + "?run=hello.json")
    expect(page.locator("#diagram g.node")).to_have_count(7)
    expect(page.locator("#live")).to_have_text("live")
    assert "st-success" in _node(page, "Determine_Time")
    assert "cursor" in _node(page, "Morning_Greeting")
    assert "st-not_reached" in _node(page, "Confirm_Greeting")
    expect(page.locator("#timeline li")).to_have_count(3)
    expect(page.locator("#var")).to_contain_text('"time_of_day": "evening"')
    mark_document(page)

    answer(hello, "eval", "false", "--note", "it is evening, not morning")
    cursor = page.locator("#diagram g.node.cursor text.name")
    expect(cursor).to_have_text("Afternoon_Greeting")
    assert "st-failure" in _node(page, "Morning_Greeting")
    last = page.locator("#timeline li").last
    expect(last).to_contain_text("evaluation failed")
    expect(last).to_contain_text("it is evening, not morning")

    answer(hello, "eval", "false")
    answer(hello, "eval", "true")
    answer(hello, "var", "greeting", "Good evening!")
    expect(page.locator("#var")).to_contain_text('"greeting": "Good evening!"')
    answer(hello, "submit", "success", "--note", "greeted")
    expect(page.locator(".summary .badge")).to_have_text("complete")
    expect(page.locator("#run-banner")).to_have_text("The workflow is done.")
    for name in ("Hello_World", "Evening_Greeting", "Confirm_Greeting"):
        assert "st-success" in _node(page, name)
    expect(page.locator("#timeline li")).to_have_count(9)
    same_document(page)
    page.screenshot(path=ARTIFACTS / "done.png")


def test_slider_shows_an_earlier_state_and_returns_to_live(
    page: Page, server: ViewServer, hello: Path
) -> None:
    answer(hello, "eval", "false")
    page.goto(server.base + "?run=hello.json")
    expect(page.locator("#diagram g.node")).to_have_count(7)
    slider = page.locator("#slider")
    expect(slider).to_have_attribute("max", "4")
    slider.fill("1")
    expect(page.locator("#position")).to_contain_text("after entry 1 of 4")
    expect(page.locator("#diagram g.node.cursor text.name")).to_have_text("Determine_Time")
    assert "st-not_reached" in _node(page, "Morning_Greeting")
    expect(page.locator("#var")).to_contain_text('"time_of_day": null')
    expect(page.locator("#timeline li.future")).to_have_count(3)
    assert "at=1" in page.url

    answer(hello, "eval", "false")
    expect(slider).to_have_attribute("max", "5")
    expect(page.locator("#position")).to_contain_text("after entry 1 of 5")
    expect(page.locator("#diagram g.node.cursor text.name")).to_have_text("Determine_Time")

    page.locator("#timeline li").nth(2).click()
    expect(page.locator("#position")).to_contain_text("after entry 3 of 5")
    expect(page.locator("#diagram g.node.cursor text.name")).to_have_text("Morning_Greeting")
    page.screenshot(path=ARTIFACTS / "slider.png")

    page.locator("#to-live").click()
    expect(page.locator("#position")).to_contain_text("latest")
    expect(page.locator("#diagram g.node.cursor text.name")).to_have_text("Evening_Greeting")


def test_node_details_show_steps_and_entries(page: Page, server: ViewServer, hello: Path) -> None:
    page.goto(server.base + "?run=hello.json")
    page.locator("#diagram g.node", has=page.locator("text", has_text="Determine_Time")).click()
    details = page.locator("#node")
    expect(details.locator("h3")).to_have_text("Determine_Time")
    expect(details.locator(".steps li")).to_have_count(1)
    expect(details.locator(".steps li")).to_contain_text("Find the current local time.")
    expect(details.locator(".steps li")).to_contain_text("writes $VAR.time_of_day")
    expect(details).to_contain_text("Trace entries (2)")
    expect(details.locator(".entries li").last).to_contain_text("it is 19:00")
    expect(page.locator("#timeline li.mark")).to_have_count(2)

    page.locator("#diagram g.node", has=page.locator("text", has_text="Morning_Greeting")).click()
    expect(details.locator(".steps li.current")).to_contain_text('$VAR.time_of_day is "morning".')
    expect(details).to_contain_text("Trace entries (0)")
    page.screenshot(path=ARTIFACTS / "run.png")


def test_the_page_waits_for_pushes_and_does_not_poll(
    page: Page, server: ViewServer, hello: Path
) -> None:
    page.goto(server.base + "?run=hello.json")
    expect(page.locator("#live")).to_have_text("live")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.wait_for_timeout(2500)
    assert requests == [], "an idle page makes no requests"
    answer(hello, "eval", "false")
    expect(page.locator("#timeline li")).to_have_count(4)
    assert [u for u in requests if "/api/run" in u] != []


def test_an_unknown_execution_says_so(page: Page, server: ViewServer) -> None:
    page.goto(server.base + "?run=missing.json")
    expect(page.locator("#error-text")).to_contain_text("no execution at 'missing.json'")
    page.goto(server.base + "?run=../etc/passwd")
    expect(page.locator("#error-text")).to_contain_text("climbs out of the served folder")


def test_a_database_lists_every_execution_and_one_opens_live(page: Page) -> None:
    server = shared_server()
    database = f"browse_{uuid.uuid4().hex[:12]}"
    server.create_database(database)
    dsn = server.database_uri(database)
    rt, hello = Runtime(), str(EXAMPLES / "hello-world.yaml")
    for name in ("alpha", "beta"):
        rt.start(hello, f"{dsn}#{name}")
    alpha = f"{dsn}#alpha"
    rt.submit(alpha, "success")
    view = ViewServer(dsn)
    try:
        page.goto(view.url)
        expect(page.locator("#folder")).to_have_text(dsn)
        rows = page.locator("#runs tbody tr")
        expect(rows).to_have_count(2)
        row = page.locator("#runs tbody tr[data-path='alpha']")
        expect(row.locator("td.open-step")).to_have_text("Determine_Time instruct")
        expect(page.locator("#live")).to_have_text("live")
        mark_document(page)
        rt.start(hello, f"{dsn}#gamma")
        expect(rows).to_have_count(3)
        same_document(page)
        page.screenshot(path=ARTIFACTS / "database-list.png")

        row.locator("a").click()
        expect(page.locator("#run-title")).to_have_text("hello-world 1.0.0")
        expect(page.locator("#live")).to_have_text("live")
        cursor = page.locator("#diagram g.node.cursor text.name")
        expect(cursor).to_have_text("Determine_Time")
        mark_document(page)
        rt.var_write(alpha, "time_of_day", "evening")
        rt.submit(alpha, "success")
        expect(cursor).to_have_text("Morning_Greeting")
        expect(page.locator("#var")).to_contain_text('"time_of_day": "evening"')
        same_document(page)
    finally:
        assert view.stop() == 0


def _token(run: Path, name: str) -> str:
    (request,) = [r for r in answer(run, "next", "--all") if r["name"] == name]
    return str(request["step"])


def test_parallel_branches_and_a_retry_as_they_happen(
    page: Page, server: ViewServer, runs: Path
) -> None:
    run = runs / "review.json"
    tether("start", EXAMPLES / "code-review.yaml", run)
    answer(run, "submit", "success")
    answer(run, "var", "summary", "Adds retries with backoff to the HTTP client.")
    answer(run, "submit", "success", "--note", "read the diff: 4 files, +120 -8")
    page.goto(server.base + "?run=review.json")
    cursors = page.locator("#diagram g.node.cursor text.name")
    expect(cursors).to_have_text(["Review_Style", "Run_Tests"])
    expect(page.locator("#run-banner")).to_contain_text("(and 1 more open)")

    answer(run, "var", "tests_passed", "false")
    answer(run, "submit", "success", "--step", _token(run, "Run_Tests"), "--note", "2 failed")
    tests = page.locator("#diagram g.node", has=page.locator("text.name", has_text="Run_Tests"))
    expect(tests.locator("text.kind")).to_have_text("ACTION · retry 1/2")
    answer(run, "var", "findings", '["name backoff_ms like the other delays"]')
    answer(run, "submit", "success", "--step", _token(run, "Review_Style"), "--note", "one nit")
    expect(cursors).to_have_text(["Run_Tests"])
    assert "st-success" in _node(page, "Review_Style")
    answer(run, "var", "tests_passed", "true")
    answer(run, "submit", "running", "--note", "suite re-running after the fix")
    expect(page.locator("#timeline li").last).to_contain_text("suite re-running")
    tests.click()
    expect(page.locator("#node")).to_contain_text("Trace entries (4)")
    expect(tests.locator("text.meta").last).to_have_text("open · step 1/2 · 4 entries")
    expect(page.locator("#node .status")).to_have_text("● open · step 1/2 · retry 1/2")
    page.screenshot(path=ARTIFACTS / "code-review.png")

"""Finding one's way in the viewer page, in a real browser: a wide tree read at the page's width,
moved and scaled and folded; the page on a phone-sized screen; switching between executions from
the side list; and trace rows that say why an action failed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from support.trees import SIGN_OFF_YAML
from viewer.driver import (
    ARTIFACTS,
    EXAMPLES,
    ViewServer,
    answer,
    mark_document,
    same_document,
    tether,
)


def _node(page: Page, name: str) -> Locator:
    """The diagram's node named `name`."""
    return page.locator("#diagram g.node", has=page.locator("text.name", has_text=name))


def _box(page: Page, name: str) -> Locator:
    """The box drawn for the node named `name`."""
    return _node(page, name).locator("rect.box")


def _bounds(locator: Locator) -> dict[str, float]:
    bounds = locator.bounding_box()
    assert bounds is not None, "it is drawn"
    return {
        "x": bounds["x"],
        "y": bounds["y"],
        "width": bounds["width"],
        "height": bounds["height"],
    }


def _inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["x"] >= outer["x"] - 1
        and inner["y"] >= outer["y"] - 1
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1
    )


def _centre(bounds: dict[str, float]) -> tuple[float, float]:
    return bounds["x"] + bounds["width"] / 2, bounds["y"] + bounds["height"] / 2


def _all_shown(page: Page) -> bool:
    frame = _bounds(page.locator("#diagram"))
    boxes = page.locator("#diagram g.node rect.box")
    return all(_inside(_bounds(boxes.nth(i)), frame) for i in range(boxes.count()))


def _token(run: Path, name: str) -> str:
    (request,) = [r for r in answer(run, "next", "--all") if r["name"] == name]
    return str(request["step"])


def test_a_wide_tree_reads_at_the_page_width_and_moves_scales_and_folds(
    page: Page, server: ViewServer, runs: Path
) -> None:
    run = runs / "story.json"
    tether("start", EXAMPLES / "story-mapping.yaml", run)
    answer(run, "submit", "success")
    page.goto(server.base + "?run=story.json")
    expect(page.locator("#diagram g.node")).to_have_count(16)
    expect(page.locator("#live")).to_have_text("live")
    # Twelve actions in a row: at "fit" every box is whole in the frame, names near full size.
    assert _all_shown(page)
    for name in ("gather_context", "walk_the_map", "record_the_plan"):
        assert _bounds(_box(page, name))["width"] >= 170, f"{name} is drawn too small to read"

    goal = _box(page, "define_goal")
    before = _bounds(goal)
    page.locator("#zoom-in").click()
    assert abs(_bounds(goal)["width"] - before["width"] * 1.25) < 2
    # Ctrl + scroll zooms about the pointer: the point under it stays under it.
    x, y = _centre(_bounds(goal))
    page.mouse.move(x, y)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -200)
    page.keyboard.up("Control")
    zoomed = _bounds(goal)
    assert zoomed["width"] > before["width"] * 2
    assert abs(_centre(zoomed)[0] - x) < 3 and abs(_centre(zoomed)[1] - y) < 3
    expect(page.locator("#zoom-level")).not_to_have_text("100%")

    # A drag moves the tree and selects nothing; a click still selects.
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 120, y - 60, steps=6)
    page.mouse.up()
    dragged = _bounds(goal)
    assert abs(dragged["x"] - (zoomed["x"] - 120)) < 2
    assert abs(dragged["y"] - (zoomed["y"] - 60)) < 2
    expect(page.locator("#node")).to_contain_text("Select a node in the tree.")
    # Scrolling over the zoomed tree moves it too.
    page.mouse.move(x, y)
    page.mouse.wheel(0, 50)
    scrolled = _bounds(goal)
    assert abs(scrolled["y"] - (dragged["y"] - 50)) < 2

    page.locator("#diagram").focus()
    page.keyboard.press("0")
    assert _all_shown(page), "0 fits the tree in the frame again"
    _node(page, "define_goal").click()
    expect(page.locator("#node h3")).to_have_text("define_goal")
    fitted = page.locator("#zoom-level").inner_text()
    page.keyboard.press("-")
    expect(page.locator("#zoom-level")).not_to_have_text(fitted)
    page.locator("#zoom-fit").click()
    expect(page.locator("#zoom-level")).to_have_text(fitted)

    # Folding: the subtree goes, its button says how many nodes it hides and that the cursor
    # is among them; the fold and the zoom survive a live update; unfolding brings it back.
    shape = page.locator('#diagram g.fold[data-fold="0"]')
    shape.click()
    expect(page.locator("#diagram g.node")).to_have_count(12)
    expect(shape.locator("text")).to_have_text("+4")
    expect(shape.locator("title")).to_have_text("Unfold 4 nodes")
    assert "holds-cursor" in str(shape.get_attribute("class"))
    page.locator("#zoom-in").click()
    level = page.locator("#zoom-level").inner_text()
    answer(run, "submit", "success")
    expect(page.locator("#timeline li")).to_have_count(2)
    expect(page.locator("#diagram g.node")).to_have_count(12)
    expect(page.locator("#zoom-level")).to_have_text(level)
    page.locator('#diagram g.fold[data-fold="0"]').click()
    expect(page.locator("#diagram g.node")).to_have_count(16)
    expect(_node(page, "gather_context").locator("text.meta").last).to_contain_text("step 2/2")
    answer(run, "eval", "true", "--note", "the user confirmed the summary")
    expect(page.locator("#diagram g.node.cursor text.name")).to_have_text("identify_users")
    page.locator("#zoom-fit").click()
    assert _all_shown(page)
    page.screenshot(path=ARTIFACTS / "story-mapping-wide.png")


def test_the_narrow_page_fits_the_screen_and_switches_from_the_drawer(
    narrow_page: Page, server: ViewServer, hello: Path, runs: Path
) -> None:
    page = narrow_page
    tether("start", EXAMPLES / "code-review.yaml", runs / "review.json")
    page.goto(server.base + "?run=hello.json")
    expect(page.locator("#diagram g.node")).to_have_count(7)
    expect(page.locator("#live")).to_have_text("live")
    assert page.evaluate("document.documentElement.scrollWidth") <= 420, "nothing spills over"
    for part in ("#slider", "#to-live", "#fork", "#diagram", "#timeline", "#var"):
        assert _bounds(page.locator(part))["x"] + _bounds(page.locator(part))["width"] <= 420, part
    # Too wide to fit legibly: it opens at a legible scale with the cursor in the frame.
    cursor = page.locator("#diagram g.node.cursor rect.box")
    assert _inside(_bounds(cursor), _bounds(page.locator("#diagram")))
    assert _bounds(cursor)["width"] >= 0.8 * 200 - 1
    expect(page.locator("#side")).to_be_hidden()
    page.screenshot(path=ARTIFACTS / "hello-narrow.png", full_page=True)

    mark_document(page)
    page.locator("#side-toggle").click()
    expect(page.locator("#side")).to_be_visible()
    page.locator("#side-runs a", has_text="review.json").click()
    expect(page.locator("#run-title")).to_have_text("Code_Review")
    expect(page.locator("#side")).to_be_hidden()
    expect(page.locator("#diagram g.node")).to_have_count(8)
    assert "run=review.json" in page.url
    assert page.evaluate("document.documentElement.scrollWidth") <= 420
    same_document(page)


def test_the_side_list_switches_executions_live_and_back(
    page: Page, server: ViewServer, hello: Path, runs: Path
) -> None:
    review = runs / "review.json"
    tether("start", EXAMPLES / "code-review.yaml", review)
    answer(review, "submit", "success")
    page.goto(server.base + "?run=hello.json&at=1")
    expect(page.locator("#position")).to_contain_text("after entry 1 of 3")
    side = page.locator("#side-runs li")
    expect(side).to_have_count(2)
    expect(page.locator("#side-runs li.current")).to_contain_text("hello.json")
    expect(page.locator("#side-runs li[data-path='review.json']")).to_contain_text("Code_Review")
    mark_document(page)

    page.locator("#side-runs a", has_text="review.json").click()
    expect(page.locator("#run-title")).to_have_text("Code_Review")
    expect(page.locator("#crumbs b")).to_have_text("review.json")
    expect(page.locator("#side-runs li.current")).to_contain_text("review.json")
    expect(page.locator("#diagram g.node")).to_have_count(8)
    expect(page.locator("#timeline li")).to_have_count(1)
    expect(page.locator("#position")).to_contain_text("latest")
    assert "run=review.json" in page.url and "at=" not in page.url
    # The execution switched to is followed live; the one left is not.
    answer(review, "var", "summary", '"retries for the HTTP client"')
    answer(review, "submit", "success")
    cursors = page.locator("#diagram g.node.cursor text.name")
    expect(cursors).to_have_text(["Review_Style", "Run_Tests"])
    answer(hello, "eval", "false")
    expect(page.locator("#side-runs li[data-path='hello.json']")).to_contain_text(
        "hello-world · 2/5"
    )
    expect(page.locator("#run-title")).to_have_text("Code_Review")
    expect(page.locator("#timeline li")).to_have_count(3)
    # A new execution joins the list; Back returns to the one before, in the same page.
    tether("start", EXAMPLES / "deploy.yaml", runs / "deploy.json")
    expect(side).to_have_count(3)
    page.go_back()
    expect(page.locator("#run-title")).to_have_text("hello-world 1.0.0")
    expect(page.locator("#timeline li")).to_have_count(4)
    expect(page.locator("#side-runs li.current")).to_contain_text("hello.json")
    same_document(page)


def _row(page: Page, trace: list[dict[str, Any]], **match: Any) -> Locator:
    """The timeline row of the last entry that matches."""
    (seq,) = [e["seq"] for e in trace if all(e.get(k) == v for k, v in match.items())][-1:]
    return page.locator(f"#timeline li[data-seq='{seq}']")


def test_a_failed_action_says_why_on_its_row(page: Page, server: ViewServer, runs: Path) -> None:
    review = runs / "review.json"
    tether("start", EXAMPLES / "code-review.yaml", review)
    answer(review, "submit", "success")
    answer(review, "var", "summary", '"a change"')
    answer(review, "submit", "success")
    answer(review, "var", "tests_passed", "false")
    answer(review, "submit", "success", "--step", _token(review, "Run_Tests"))
    answer(review, "submit", "failure", "--step", _token(review, "Review_Style"))
    hello = runs / "hello.json"
    tether("start", EXAMPLES / "hello-world.yaml", hello)
    answer(hello, "submit", "success")
    answer(hello, "var", "time_of_day", "evening")
    answer(hello, "submit", "success")
    answer(hello, "eval", "false")

    page.goto(server.base + "?run=review.json")
    trace = answer(review, "trace")
    tests = _row(page, trace, name="Run_Tests", kind="instruct")
    expect(tests).to_contain_text("action failed")
    expect(tests.locator(".why")).to_have_text("✗ check $VAR.tests_passed == true is false")
    style = _row(page, trace, name="Review_Style", kind="instruct")
    expect(style.locator(".why")).to_have_text("✗ the agent reported failure")
    passed = _row(page, trace, name="Gather_Context", kind="instruct")
    expect(passed.locator(".why")).to_have_count(0)

    page.goto(server.base + "?run=hello.json")
    morning = _row(page, answer(hello, "trace"), name="Morning_Greeting")
    expect(morning.locator(".why")).to_have_text('✗ judged false: “$VAR.time_of_day is "morning".”')


def test_a_human_panel_stays_with_its_execution(
    page: Page, server: ViewServer, hello: Path, runs: Path, tmp_path: Path
) -> None:
    tree = tmp_path / "sign-off.yaml"
    tree.write_text(SIGN_OFF_YAML)
    ship = runs / "ship.json"
    tether("start", tree, ship)
    answer(ship, "submit", "success")
    answer(ship, "submit", "success", "--set", "notes=faster builds")
    page.goto(server.base + "?run=ship.json")
    expect(page.locator("#human")).to_be_visible()
    page.locator("#side-runs a", has_text="hello.json").click()
    expect(page.locator("#run-title")).to_have_text("hello-world 1.0.0")
    expect(page.locator("#human")).to_be_hidden()
    page.go_back()
    expect(page.locator("#human")).to_contain_text("Read the release notes. Approve to publish.")

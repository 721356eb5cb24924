"""`tether show` and `tether render`, run as a user runs them, on executions the CLI drove."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from viewer.driver import EXAMPLES, answer, tether

SVG = "{http://www.w3.org/2000/svg}"


def _boxes(svg: Path) -> dict[str, dict[str, str]]:
    """Each node box of an SVG picture by name: its classes and its text lines."""
    out = {}
    for g in ET.parse(svg).getroot().iter(f"{SVG}g"):
        if "node" in g.get("class", "").split():
            texts = {t.get("class", ""): "".join(t.itertext()) for t in g.iter(f"{SVG}text")}
            out[texts["name"]] = {"class": g.get("class", ""), **texts}
    return out


def test_show_draws_statuses_cursor_and_counts(hello: Path) -> None:
    answer(hello, "eval", "false")
    out = tether("show", hello).stdout
    lines = out.splitlines()
    assert lines[0] == "hello-world · running · evaluating · 4 entries"
    assert lines[1] == "Hello_World (sequence)  ● open"
    assert "├─ Determine_Time (action)  ✓ success  2 entries" in lines
    assert "│  ├─ Morning_Greeting (action)  ✗ failure  1 entry" in lines
    cursor = [line for line in lines if "◀" in line]
    assert cursor == [
        "│  ├─ Afternoon_Greeting (action)  ● open  step 1/2"
        '  ◀ evaluate: $VAR.time_of_day is "afternoon".'
    ]
    assert "└─ Confirm_Greeting (action)  ○ not reached" in lines
    assert "\x1b[" not in out, "no colour when stdout is not a terminal"


def test_show_at_an_earlier_entry_and_in_colour(hello: Path) -> None:
    out = tether("show", hello, "--at", "1", "--color").stdout
    assert out.splitlines()[0] == "hello-world · running · performing · after entry 1 of 3"
    assert "\x1b[32m" not in out, "nothing had succeeded after the first entry"
    assert "Determine_Time (action)  \x1b[1;36m● open\x1b[0m  step 1/1" in out


def test_show_a_finished_and_a_failed_execution(hello: Path, runs: Path) -> None:
    answer(hello, "eval", "false")
    answer(hello, "eval", "false")
    answer(hello, "eval", "false")
    out = tether("show", hello).stdout
    assert "failed" in out.splitlines()[0]
    assert "Evening_Greeting (action)  ✗ failure  1 entry" in out
    assert "Choose_Greeting (selector)  ✗ failure" in out
    assert out.splitlines()[-1].startswith("✗ ")
    gated = runs / "gated.json"
    tether("start", EXAMPLES / "hello-world.yaml", gated)
    assert "▶ waiting for the protocol (Acknowledge_Protocol)" in tether("show", gated).stdout


def test_show_refuses_what_is_not_an_execution(runs: Path) -> None:
    err = json.loads(tether("show", runs / "missing.json", code=4).stderr)
    assert err["error"]["code"] == "not_found"
    err = json.loads(tether("show", runs / "x.json", "--at", "-1", code=2).stderr)
    assert err["error"]["code"] == "usage"


def test_render_an_execution_colours_each_node(hello: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.svg"
    result = json.loads(tether("render", hello, "-o", out).stdout)
    assert result["execution"] is True and result["tree"] == "hello-world"
    boxes = _boxes(out)
    assert len(boxes) == 7
    assert "st-success" in boxes["Determine_Time"]["class"]
    assert "2 entries" in boxes["Determine_Time"]["meta"]
    assert "cursor" in boxes["Morning_Greeting"]["class"]
    assert "st-not_reached" in boxes["Confirm_Greeting"]["class"]
    earlier = tmp_path / "earlier.svg"
    tether("render", hello, "-o", earlier, "--at", "1")
    assert "cursor" in _boxes(earlier)["Determine_Time"]["class"]


def test_render_a_tree_file_lays_out_every_node_without_overlap(tmp_path: Path) -> None:
    out = tmp_path / "tree.svg"
    tether("render", EXAMPLES / "code-review.yaml", "-o", out)
    boxes = _boxes(out)
    assert set(boxes) == {
        "Code_Review",
        "Gather_Context",
        "Review",
        "Review_Style",
        "Run_Tests",
        "Decide",
        "Approve",
        "Request_Changes",
    }
    assert boxes["Run_Tests"]["kind"] == "ACTION · retries 2"
    assert boxes["Review"]["kind"] == "PARALLEL · policy all"
    assert boxes["Approve"]["meta"] == "3 steps"
    corners = []
    for g in ET.parse(out).getroot().iter(f"{SVG}g"):
        if "node" in g.get("class", "").split():
            x, y = g.get("transform", "")[len("translate(") : -1].split(",")
            corners.append((float(x), float(y)))
    assert len(set(corners)) == len(corners)
    for i, (x1, y1) in enumerate(corners):
        for x2, y2 in corners[i + 1 :]:
            assert y1 != y2 or abs(x1 - x2) >= 200, "boxes on one row must not overlap"


def test_render_tells_a_tree_file_from_an_execution(hello: Path, tmp_path: Path) -> None:
    """The store says what is an execution: a JSON tree file, or a tree file reached by a
    symbolic link, is drawn as a tree; an execution as one, with its statuses."""
    as_json = tmp_path / "hello.json"
    as_json.write_text(json.dumps(yaml.safe_load((EXAMPLES / "hello-world.yaml").read_text())))
    linked = tmp_path / "linked.yaml"
    linked.symlink_to(EXAMPLES / "hello-world.yaml")
    for source in (as_json, linked):
        result = json.loads(tether("render", source, "-o", tmp_path / "t.svg").stdout)
        assert (result["tree"], result["execution"]) == ("hello-world", False), source
    result = json.loads(tether("render", hello, "-o", tmp_path / "e.svg").stdout)
    assert result["execution"] is True
    assert "st-success" in _boxes(tmp_path / "e.svg")["Determine_Time"]["class"]


def test_render_needs_an_output_and_a_readable_source(tmp_path: Path) -> None:
    err = json.loads(tether("render", EXAMPLES / "deploy.yaml", code=2).stderr)
    assert "-o" in err["error"]["message"]
    err = json.loads(
        tether("render", tmp_path / "none.yaml", "-o", tmp_path / "x.svg", code=4).stderr
    )
    assert err["error"]["code"] == "not_found"


def test_show_marks_every_open_branch_and_the_retries_used(runs: Path) -> None:
    run = runs / "review.json"
    tether("start", EXAMPLES / "code-review.yaml", run)
    answer(run, "submit", "success")
    answer(run, "var", "summary", "a change")
    answer(run, "submit", "success")
    lines = tether("show", run).stdout.splitlines()
    assert [line.split("  ◀")[0] for line in lines if "◀" in line] == [
        "│  ├─ Review_Style (action)  ● open  step 1/1",
        "│  └─ Run_Tests (action, retries 2)  ● open  step 1/2",
    ]
    (tests,) = [r for r in answer(run, "next", "--all") if r["name"] == "Run_Tests"]
    answer(run, "var", "tests_passed", "false")
    answer(run, "submit", "success", "--step", tests["step"])
    lines = tether("show", run).stdout.splitlines()
    assert "│  └─ Run_Tests (action, retry 1/2)  ● open  step 1/2 · 2 entries" in [
        line.split("  ◀")[0] for line in lines
    ]
    assert "├─ Review (parallel, policy all)  ● open" in lines

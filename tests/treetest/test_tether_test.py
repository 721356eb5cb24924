"""`tether test`, run as a real process: the examples' cases and the project's own cases in
abtree's format pass; a case that differs fails with the first difference and exit 3; a tree
that does not load is a failure before the first step; the case files are read strictly, and
abtree's `files` are never written outside the folder they are staged in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.errors import EXIT_INVALID, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ABTREE_CASES = Path(__file__).parent / "abtree" / "cases"
TETHER = [sys.executable, "-m", "tether.cli.main", "test"]
HELLO = str(EXAMPLES / "hello-world.yaml")


def tether_test(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TETHER, *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


def json_report(*args: str, cwd: Path = ROOT) -> tuple[int, dict[str, Any]]:
    done = tether_test(*args, "--json", cwd=cwd)
    return done.returncode, json.loads(done.stdout)


def error_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.stdout == ""
    return dict(json.loads(done.stderr)["error"])


def cases_file(folder: Path, *cases: str, tree: str = HELLO, name: str = "t.yaml") -> Path:
    """A file in Tether's format with these cases (YAML flow mappings, one a line)."""
    path = folder / name
    path.write_text(f"tree: {tree}\ncases:\n" + "".join(f"  - {c}\n" for c in cases))
    return path


MORNING = (
    "{instruct: Determine_Time, write: {time_of_day: morning}}, "
    "{evaluate: Morning_Greeting, result: true}, "
    "{instruct: Morning_Greeting, write: {greeting: Hi}}"
)


# -- what passes ----------------------------------------------------------------------------------


def test_the_examples_pass_their_cases() -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in (EXAMPLES / "cases").glob("*.yaml"))
    assert files == [
        "examples/cases/code-review.yaml",
        "examples/cases/deploy.yaml",
        "examples/cases/hello-world.yaml",
        "examples/cases/release.yaml",
        "examples/cases/review-changes.yaml",
        "examples/cases/team-fix.yaml",
    ]
    done = tether_test(*files)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "PASS examples/cases/code-review.yaml: approves after the tests pass on their second run"
    )
    assert lines[-1] == "19 passed, 0 failed"
    assert all(line.startswith("PASS ") for line in lines[:-1])


def test_the_projects_cases_in_abtrees_format_pass() -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in ABTREE_CASES.glob("*.yaml"))
    assert len(files) == 13
    done = tether_test(*files)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "PASS tests/treetest/abtree/cases/01-sequence-runs-every-child.yaml"
    assert lines[-1] == "13 passed, 0 failed"
    # the cycle's case passes, and its load error is shown beside it
    cycle = lines.index(
        "PASS tests/treetest/abtree/cases/13-pointer-cycle-fails-before-the-first-step.yaml"
    )
    assert lines[cycle + 1] == (
        "     the tree did not load: loop/TREE.yaml:7:13: $ref cycle: #/tree -> #/tree "
        "at tree.children[0].$ref"
    )


def test_the_json_report_has_every_case() -> None:
    code, report = json_report(str(ABTREE_CASES / "06-retries-run-out.yaml"))
    assert code == EXIT_OK
    assert report == {
        "passed": 1,
        "failed": 0,
        "cases": [
            {
                "file": str(ABTREE_CASES / "06-retries-run-out.yaml"),
                "name": "06-retries-run-out",
                "passed": True,
            }
        ],
    }


def test_a_refused_answer_can_be_expected(tmp_path: Path) -> None:
    path = cases_file(
        tmp_path,
        "{name: refused, steps: [{instruct: Determine_Time, refused: writes_missing}, "
        + MORNING
        + "], end: {status: done, var: {greeting: Hi}}}",
    )
    done = tether_test(str(path))
    assert done.returncode == EXIT_OK, done.stdout
    assert done.stdout.splitlines() == [f"PASS {path}: refused", "1 passed, 0 failed"]


TEAM = str(EXAMPLES / "team-fix.yaml")
PLANNED = "{instruct: Plan, write: {files: [a.py, b.py]}}"


@pytest.mark.parametrize(
    ("steps", "expected", "got"),
    [
        (
            "{instruct: Fix_File, item: c.py, agent: bob}",
            "instruct 'Fix_File' for item \"c.py\" open",
            "instruct 'Fix_File'; instruct 'Fix_File'; instruct 'Write_Notes'",
        ),
        (
            "{claim: Fix_File, item: a.py, agent: bob, refused: claimed}",
            "a claim by 'bob' refused with claimed",
            "claimed",
        ),
        (
            "{claim: Fix_File, item: a.py, agent: bob, outcome: taken_over}",
            "a claim by 'bob': taken_over",
            "claimed",
        ),
        (
            "{claim: Fix_File, item: a.py, agent: bob}, "
            "{instruct: Fix_File, item: a.py, agent: carol}",
            "submit success accepted",
            "refused: claimed: 'Fix_File' is claimed by 'bob' until",
        ),
    ],
)
def test_a_teams_step_that_differs_fails_with_what_it_expected(
    tmp_path: Path, steps: str, expected: str, got: str
) -> None:
    cases_file(
        tmp_path, f"{{name: x, steps: [{PLANNED}, {steps}], end: {{status: done}}}}", tree=TEAM
    )
    done = tether_test("t.yaml", cwd=tmp_path)
    assert done.returncode == EXIT_INVALID, done.stdout
    failed = done.stdout.splitlines()[1]
    last = 2 + steps.count("}, {")  # the plan is step 1; the last step given fails
    assert failed.startswith(f"     step {last} (t.yaml:")
    assert f": expected {expected}, got {got}" in failed


def test_a_wait_lets_a_lease_lapse_only_once_it_has_passed(tmp_path: Path) -> None:
    claim = "{claim: Fix_File, item: a.py, agent: alice, lease: 60}"
    take = "{claim: Fix_File, item: a.py, agent: bob, outcome: taken_over}"
    rest = (
        "{instruct: Fix_File, item: a.py, agent: alice, refused: claimed}, "
        "{instruct: Fix_File, item: a.py, agent: bob}, {instruct: Fix_File, item: b.py}, "
        "{instruct: Write_Notes, write: {notes: n}}, {evaluate: Review, result: true}"
    )
    cases_file(
        tmp_path,
        f"{{name: early, steps: [{PLANNED}, {claim}, {{wait: 59}}, {take}], "
        "end: {status: done}}",
        f"{{name: late, steps: [{PLANNED}, {claim}, {{wait: 60}}, {take}, {rest}], "
        "end: {status: done}}",
        tree=TEAM,
    )
    lines = tether_test("t.yaml", cwd=tmp_path).stdout.splitlines()
    assert lines[0] == "FAIL t.yaml: early"
    assert "expected a claim by 'bob' accepted, got refused: claimed: 'Fix_File'" in lines[1]
    assert lines[2:] == ["PASS t.yaml: late", "1 passed, 1 failed"]


# -- what fails, and how it says so ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "at", "expected", "got"),
    [
        (
            "{name: x, steps: [{instruct: Determine_Time, write: {time_of_day: morning}}, "
            "{evaluate: Evening_Greeting, result: true}], end: {status: done}}",
            "step 2 (t.yaml:3)",
            "evaluate 'Evening_Greeting'",
            "evaluate 'Morning_Greeting'",
        ),
        (
            "{name: x, steps: [{instruct: Determine_Time, write: {time_of_day: morning}}], "
            "end: {status: done}}",
            "end",
            '{"status": "done"}',
            "evaluate 'Morning_Greeting' still open",
        ),
        (
            "{name: x, steps: [" + MORNING + "], end: {status: failure}}",
            "end",
            '{"status": "failure"}',
            '{"status": "done"}',
        ),
        (
            "{name: x, steps: [" + MORNING + "], end: {status: done, var: {greeting: 1}}}",
            "end",
            "var greeting = 1",
            '"Hi"',
        ),
        (
            "{name: x, steps: [" + MORNING + "], end: {status: done, var: {time_of_day: true}}}",
            "end",
            "var time_of_day = true",
            '"morning"',
        ),
        (
            "{name: x, steps: [" + MORNING + "], end: {status: done, var: {a.b: 1}}}",
            "end",
            "var a.b = 1",
            "nothing there",
        ),
        (
            "{name: x, steps: [" + MORNING + "], end: {status: done, retries: {Hello_World: 1}}}",
            "end",
            "1 retries used by 'Hello_World'",
            "0 retries",
        ),
        (
            "{name: x, steps: [" + MORNING + "], end: {status: done, retries: {Nowhere: 0}}}",
            "end",
            "retries of the node named 'Nowhere'",
            "no node",
        ),
        (
            "{name: x, steps: [{instruct: Determine_Time}], end: {status: done}}",
            "step 1 (t.yaml:3)",
            "submit success accepted",
            "refused: writes_missing: step 'Determine_Time' must write $VAR.time_of_day before "
            "it is submitted as success",
        ),
        (
            "{name: x, steps: [{instruct: Determine_Time, write: {time_of_day: x}, refused: "
            "writes_missing}], end: {status: done}}",
            "step 1 (t.yaml:3)",
            "submit success refused with writes_missing",
            "accepted",
        ),
        (
            "{name: x, steps: [{instruct: Determine_Time, write: {a..b: 1}}], end: {status: done}}",
            "step 1 (t.yaml:3)",
            "var a..b written",
            "refused: invalid_path: bad var path 'a..b': use dot-separated keys such as "
            "'build.tag' (no empty segments, no surrounding spaces)",
        ),
        (
            "{name: x, steps: [{human: Determine_Time, decision: approve}], end: {status: done}}",
            "step 1 (t.yaml:3)",
            "human 'Determine_Time'",
            "instruct 'Determine_Time'",
        ),
    ],
    ids=[
        "wrong_request",
        "still_open_at_the_end",
        "wrong_status",
        "var_of_another_type",
        "true_is_not_a_string",
        "var_never_written",
        "retries_not_used",
        "retries_of_no_node",
        "answer_refused",
        "refusal_expected_but_accepted",
        "write_refused",
        "human_expected_but_an_instruct_came",
    ],
)
def test_a_case_that_differs_fails_with_the_first_difference(
    tmp_path: Path, case: str, at: str, expected: str, got: str
) -> None:
    path = cases_file(tmp_path, case)
    done = tether_test("t.yaml", cwd=tmp_path)
    assert done.returncode == EXIT_INVALID
    assert done.stdout.splitlines() == [
        "FAIL t.yaml: x",
        f"     {at}: expected {expected}, got {got}",
        "0 passed, 1 failed",
    ]
    code, report = json_report(str(path))
    assert code == EXIT_INVALID
    assert report["cases"][0] == {
        "file": str(path),
        "name": "x",
        "passed": False,
        "at": at.replace("t.yaml", str(path)),
        "expected": expected,
        "got": got,
    }


def test_retries_name_a_node_by_a_path_of_names_when_the_name_is_not_unique(
    tmp_path: Path,
) -> None:
    (tmp_path / "tree.yaml").write_text(
        "name: t\ntree:\n  type: sequence\n  name: Root\n  children:\n"
        "    - {type: sequence, name: A, retries: 1, children: "
        "[{type: action, name: Go, steps: [instruct: go]}]}\n"
        "    - {type: sequence, name: B, children: "
        "[{type: action, name: Go, retries: 1, steps: [instruct: go]}]}\n"
    )
    walk = "[{instruct: Go, submit: failure}, {instruct: Go}, {instruct: Go}]"
    cases_file(
        tmp_path,
        f"{{name: ok, steps: {walk}, end: {{status: done, retries: {{Root/A: 1, Root/B/Go: 0}}}}}}",
        f"{{name: two, steps: {walk}, end: {{status: done, retries: {{Go: 0}}}}}}",
        tree="tree.yaml",
    )
    done = tether_test("t.yaml", cwd=tmp_path)
    assert done.stdout.splitlines() == [
        "PASS t.yaml: ok",
        "FAIL t.yaml: two",
        "     end: expected retries of the node named 'Go', got 2 nodes (give a Root/Child path)",
        "1 passed, 1 failed",
    ]


SIGN_OFF = """\
name: sign-off
tree:
  type: sequence
  name: Ship
  children:
    - type: action
      name: Draft
      steps:
        - instruct: Write the release notes at $VAR.notes.
          writes: [notes]
    - type: action
      name: Sign_Off
      steps:
        - human: |
            Read the release notes.
            Approve to publish them.
        - instruct: Publish the notes.
"""


def test_a_persons_decision_answers_a_human_step(tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(SIGN_OFF)
    draft = "{instruct: Draft, write: {notes: v2}}"
    cases_file(
        tmp_path,
        f"{{name: approved, steps: [{draft}, {{human: Sign_Off, decision: approve, note: ok}}, "
        "{instruct: Sign_Off}], end: {status: done}}",
        f"{{name: rejected, steps: [{draft}, {{human: Sign_Off, decision: reject}}], "
        "end: {status: failure}}",
        f"{{name: publishing fails after approval, steps: [{draft}, "
        "{human: Sign_Off, decision: approve}, {instruct: Sign_Off, submit: failure}], "
        "end: {status: failure}}",
        f"{{name: a submit is no decision, steps: [{draft}, {{instruct: Sign_Off}}], "
        "end: {status: done}}",
        tree="tree.yaml",
    )
    done = tether_test("t.yaml", cwd=tmp_path)
    assert done.stdout.splitlines() == [
        "PASS t.yaml: approved",
        "PASS t.yaml: rejected",
        "PASS t.yaml: publishing fails after approval",
        "FAIL t.yaml: a submit is no decision",
        "     step 2 (t.yaml:6): expected instruct 'Sign_Off', got human 'Sign_Off'",
        "3 passed, 1 failed",
    ]


# -- a tree that does not load -------------------------------------------------------------------

CYCLE = (
    "files:\n  loop/TREE.yaml: |\n    name: loop\n    tree:\n      type: sequence\n"
    "      name: L\n      children:\n        - $ref: '#/tree'\n"
)


@pytest.mark.parametrize(
    ("tail", "passed", "difference"),
    [
        ("steps: []\nfinal: {status: failure}\n", True, None),
        (
            "steps: [{type: instruct, name: A}]\nfinal: {status: failure}\n",
            False,
            "step 1 (c.yaml:10): expected instruct 'A', got failure before the first step "
            "(the tree did not load)",
        ),
        (
            "steps: []\nfinal: {status: done}\n",
            False,
            "end: expected status done, got failure before the first step (the tree did not load)",
        ),
        (
            "steps: []\nfinal: {status: failure, local: {a: 1}}\n",
            False,
            "end: expected var values, got nothing: the tree did not load",
        ),
    ],
    ids=["expected_exactly_that", "expected_a_step", "expected_done", "expected_var_values"],
)
def test_a_tree_that_does_not_load_is_a_failure_before_the_first_step(
    tmp_path: Path, tail: str, passed: bool, difference: str | None
) -> None:
    (tmp_path / "c.yaml").write_text("tree: loop\n" + CYCLE + tail)
    done = tether_test("c.yaml", cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert lines[0] == ("PASS c.yaml" if passed else "FAIL c.yaml")
    assert done.returncode == (EXIT_OK if passed else EXIT_INVALID)
    if difference is not None:
        assert lines[1] == f"     {difference}"
    assert lines[-2] == (
        "     the tree did not load: loop/TREE.yaml:6:13: $ref cycle: #/tree -> #/tree "
        "at tree.children[0].$ref"
    )


def test_a_missing_tree_file_fails_the_case_and_never_counts_as_a_load_failure(
    tmp_path: Path,
) -> None:
    (tmp_path / "c.yaml").write_text("tree: nowhere\nsteps: []\nfinal: {status: failure}\n")
    cases_file(tmp_path, "{name: x, steps: [], end: {status: failure}}", tree="nowhere.yaml")
    done = tether_test("c.yaml", "t.yaml", cwd=tmp_path)
    assert done.returncode == EXIT_INVALID
    assert done.stdout.splitlines() == [
        "FAIL c.yaml",
        "     start: expected tree 'nowhere', got not in files, not at trees/nowhere/TREE.yaml "
        "beside the case or its folder, not a file",
        "FAIL t.yaml: x",
        "     start: expected the tree nowhere.yaml to start, got no such tree file nowhere.yaml",
        "0 passed, 2 failed",
    ]


# -- files are staged inside their folder ---------------------------------------------------------


@pytest.mark.parametrize("path", ["../escaped.yaml", "a/../../escaped.yaml", "/tmp/escaped.yaml"])
def test_files_that_would_leave_their_folder_are_refused_and_never_written(
    tmp_path: Path, path: str
) -> None:
    case = tmp_path / "cases" / "c.yaml"
    case.parent.mkdir()
    case.write_text(
        f"tree: t\nfiles:\n  {json.dumps(path)}: 'x'\n  t/TREE.yaml: 'x'\nsteps: []\n"
        "final: {status: failure}\n"
    )
    done = tether_test("cases/c.yaml", cwd=tmp_path)
    error = error_of(done)
    assert (done.returncode, error["code"]) == (EXIT_INVALID, "invalid_value")
    assert error["key"] == f"files[{json.dumps(path)}]"
    assert "must be a relative path inside the folder" in error["message"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["c.yaml", "cases"]
    assert not Path("/tmp/escaped.yaml").exists()


# -- reading case files ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "key"),
    [
        (
            "tree: t.yaml\ncases:\n  - name: x\n    stpes: []\n    end: {status: done}\n",
            "c.yaml:3:5: missing key 'steps' at cases[0]",
            "cases[0]",
        ),
        (
            "tree: t.yaml\ncases:\n  - {name: x, steps: [], end: {status: done}, vra: {}}\n",
            "c.yaml:3:47: unknown key 'vra' at cases[0] (cases[0] takes name, description, tree, "
            "var, const, steps, end)",
            "cases[0].vra",
        ),
        (
            "tree: t.yaml\ncases:\n  - {name: x, steps: [{instruct: A, evaluate: B}], "
            "end: {status: done}}\n",
            "c.yaml:3:23: cases[0].steps[0] takes exactly one of instruct, evaluate, human, "
            "claim or wait at cases[0].steps[0]",
            "cases[0].steps[0]",
        ),
        (
            "tree: t.yaml\ncases:\n  - {name: x, steps: [{evaluate: B}], end: {status: done}}\n",
            "c.yaml:3:23: missing key 'result' at cases[0].steps[0]",
            "cases[0].steps[0]",
        ),
        (
            "tree: t.yaml\ncases:\n  - {name: x, steps: [], end: {status: finished}}\n",
            "c.yaml:3:40: cases[0].end.status must be one of done, failure, got 'finished' "
            "at cases[0].end.status",
            "cases[0].end.status",
        ),
        (
            "tree: t.yaml\ncases: []\n",
            "c.yaml:2:8: cases must not be empty at cases",
            "cases",
        ),
        (
            "tree: x\nsteps: [{type: instruct, name: A, result: true}]\nfinal: {status: done}\n",
            "c.yaml:2:35: unknown key 'result' at steps[0] (steps[0] takes type, name, write, "
            "submit)",
            "steps[0].result",
        ),
        (
            "tree: x\nsteps: [{type: think, name: A}]\nfinal: {status: done}\n",
            "c.yaml:2:9: steps[0] takes exactly one of type: instruct or type: evaluate "
            "at steps[0]",
            "steps[0]",
        ),
        (
            "tree: x\nsteps: []\nfinal: {status: done, runtime: {retry_count: {'': -1}}}\n",
            'c.yaml:3:51: final.runtime.retry_count[""] must be 0 or more, got -1 '
            'at final.runtime.retry_count[""]',
            'final.runtime.retry_count[""]',
        ),
        (
            "tree: &t x\nsteps: []\nfinal: {status: done}\n",
            "c.yaml:1:7: YAML anchors and aliases (&name, *name) are not allowed",
            "(root)",
        ),
        (
            "- tree\n",
            "c.yaml:1:1: a test file must be a mapping with `tree` and `cases` (or abtree's case)",
            "(root)",
        ),
    ],
    ids=[
        "missing_key",
        "unknown_key",
        "two_step_kinds",
        "evaluate_without_result",
        "unknown_status",
        "no_cases",
        "abtree_instruct_with_result",
        "abtree_unknown_type",
        "negative_retry_count",
        "yaml_alias",
        "not_a_mapping",
    ],
)
def test_a_bad_case_file_is_refused_before_anything_runs(
    tmp_path: Path, text: str, message: str, key: str
) -> None:
    (tmp_path / "c.yaml").write_text(text)
    good = cases_file(tmp_path, "{name: ok, steps: [" + MORNING + "], end: {status: done}}")
    done = tether_test(str(good), "c.yaml", cwd=tmp_path)
    error = error_of(done)
    assert (done.returncode, error["code"]) == (EXIT_INVALID, "invalid_value")
    assert error["message"] == message
    assert error["key"] == key


def test_a_missing_case_file_is_not_found_and_usage_errors_are_usage(tmp_path: Path) -> None:
    done = tether_test("nope.yaml", cwd=tmp_path)
    assert (done.returncode, error_of(done)["code"]) == (EXIT_NOT_FOUND, "not_found")
    done = tether_test(cwd=tmp_path)
    assert (done.returncode, error_of(done)["code"]) == (EXIT_USAGE, "usage")
    done = tether_test("--jsn", "nope.yaml", cwd=tmp_path)
    error = error_of(done)
    assert (done.returncode, error["code"]) == (EXIT_USAGE, "usage")
    assert "unknown option '--jsn' (did you mean --json?)" in error["message"]


def test_help_and_schema(tmp_path: Path) -> None:
    done = tether_test("--help", cwd=tmp_path)
    assert done.returncode == EXIT_OK
    assert done.stdout.startswith("usage: tether test FILE... [--json] [--schema]")
    schema = json.loads(tether_test("--schema", cwd=tmp_path).stdout)
    committed = json.loads((ROOT / "schema" / "case.schema.json").read_text())
    assert schema == committed, "regenerate with: tether test --schema > schema/case.schema.json"

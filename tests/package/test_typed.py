"""`import tether` is typed: a type checker sees `tether.Runtime`, `tether.load_tree` and
`tether.TetherError` as the real class and functions (not `Any` through the lazy
`__getattr__`), and the verbs' results as the `TypedDict`s of `tether.results`, so it catches a
misuse. Runs mypy, the type checker the project uses, on a user's snippet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tether

SRC = str(Path(tether.__file__).resolve().parents[1])

SNIPPET = """
import tether

reveal_type(tether.Runtime)
reveal_type(tether.load_tree)
reveal_type(tether.TetherError)
rt = tether.Runtime()
started = rt.start("tree.yaml", "memory://run")
reveal_type(started["current"])
reveal_type(rt.next("memory://run"))
reveal_type(rt.next("memory://run", all=True))
rt.submit("memory://run", 3)
started["nope"]
"""


def _mypy(tmp_path: Path, code: str) -> list[str]:
    """mypy's report on `code` as a user's module, with this checkout's `tether` on its path:
    its `note:` and `error:` lines, the file name left off."""
    (tmp_path / "user.py").write_text(code)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "user.py"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": SRC},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return [line.split(": ", 1)[1] for line in done.stdout.splitlines() if ": " in line]


def test_public_names_are_the_real_ones_and_misuse_is_caught(tmp_path: Path) -> None:
    report = _mypy(tmp_path, SNIPPET)
    revealed = [line for line in report if line.startswith("note: Revealed type is")]
    errors = [line for line in report if line.startswith("error:")]
    assert len(revealed) == 6, report
    assert revealed[0].endswith('-> tether.verbs.Runtime"'), revealed[0]
    assert revealed[1].endswith('-> tether.tree.canonical.Tree"'), revealed[1]
    assert revealed[2].endswith('-> tether.errors.TetherError"'), revealed[2]
    assert revealed[3].startswith('note: Revealed type is "TypedDict(tether.results.Request, {')
    assert "'step'?: str" in revealed[3]
    assert revealed[4] == revealed[3]
    assert revealed[5].startswith('note: Revealed type is "list[TypedDict(tether.results.Request')
    assert len(errors) == 2, report
    assert 'Argument 2 to "submit" of "Runtime" has incompatible type "int"' in errors[0]
    assert '"Started" has no key "nope"' in errors[1]


def test_the_public_names_still_load_lazily() -> None:
    """Type checkers see imports; the interpreter does not: `import tether` loads no verb
    layer until `tether.Runtime` is asked for."""
    probe = (
        "import sys, tether; before = 'tether.verbs' in sys.modules; tether.Runtime; "
        "print(before, 'tether.verbs' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["False", "True"]


def test_every_name_in_all_is_there_and_star_import_gives_them() -> None:
    """`tether.__all__` is the public face: each of its names is found (`tether.build` among
    them, the trees-in-code module), and `from tether import *` brings exactly those."""
    probe = (
        "import tether; print(all(getattr(tether, n) is not None for n in tether.__all__)); "
        "scope = {}; exec('from tether import *', scope); "
        "print(sorted(n for n in scope if not n.startswith('__')) == sorted(tether.__all__)); "
        "print(callable(tether.build.sequence))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "True", "True"]


def test_every_public_runtime_method_names_its_parameters() -> None:
    """Each public verb's docstring names every parameter, in backticks, and what it returns."""
    import inspect

    from tether.verbs import Runtime

    unnamed = []
    for name, method in inspect.getmembers(Runtime, inspect.isfunction):
        if name.startswith("_"):
            continue
        doc = inspect.getdoc(method) or ""
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        unnamed += [f"{name}({p})" for p in params if f"`{p}`" not in doc]
        if not doc:
            unnamed.append(f"{name}: no docstring")
    assert unnamed == []

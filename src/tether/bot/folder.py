"""Bot folders: a bot written as folders and files, and its build into a tree file.

Owns the folder layout and its strict reading. A bot folder holds phase folders (`1_shape/`,
`2_discover/`), each holding action folders (`1_frame_the_goal/`); a number prefix gives the
order and is dropped from the name, and folders without one follow the numbered ones by name.
A folder in the bot folder that holds `instructions.md` is an action folder, not a phase: an
independent action (outside the workflow, callable at any time), in the same order. Files give
the rest:

- in any of the three levels: `description.md` (what it is for) and `triggers.txt` (phrases a
  person might say to ask for it, one per line);
- in an action folder: `instructions.md` (required: the work), `criteria.txt` (completion
  criteria, one per line), `checks.txt` (CEL expressions `close` must find true, one per line)
  and `writes.txt` (var paths the action must write, one per line).

In the line files, blank lines and lines starting with `#` are skipped and a leading `- ` is
dropped, so a Markdown list works. Anything else in a folder is an error naming the folder and
the file. The build (`build_tree`) gives the tree data, `render` its YAML text (deterministic:
the same folder always gives the same bytes).

It does not decide what a bot tree means (`tether.bot.surface`) or validate trees
(`tether.tree`, which the build calls on its result).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tether.bot.surface import surface_of
from tether.errors import TetherError
from tether.tree.model import KIND_PHRASES, NAME_PATTERN, WRITE_PATH_PATTERN

COMMON_FILES = ("description.md", "triggers.txt")
ACTION_FILES = ("instructions.md", "criteria.txt", "checks.txt", "writes.txt", *COMMON_FILES)
_NUMBERED = re.compile(r"^(\d+)_(.+)$")


def build_tree(folder: str | Path) -> dict[str, Any]:
    """The normalised tree of the bot folder `folder`; `invalid_tree` (naming the folder or
    file and what is wrong) or `not_found` when it cannot be read as a bot."""
    from tether.tree.load import normalise

    root = Path(folder)
    if not root.is_dir():
        raise TetherError("not_found", f"{folder}: no such bot folder", folder=str(folder))
    name = root.resolve().name
    _check_name(name, root, "the bot folder's name")
    _files(root, COMMON_FILES, subfolders=True)
    found = _numbered(root, "phase")
    independent = [_action(path, n) for path, n in found if (path / "instructions.md").exists()]
    phases = [_phase(path, n) for path, n in found if not (path / "instructions.md").exists()]
    if not phases:
        raise _bad(root, "holds no phase folders (sub-folders such as 1_shape/)")
    tree: dict[str, Any] = {"name": name}
    description = _text(root / "description.md")
    if description is not None:
        tree["description"] = description
    node: dict[str, Any] = {"type": "sequence", "name": name}
    triggers = _lines(root / "triggers.txt")
    if triggers:
        node["triggers"] = triggers
    node["children"] = phases
    tree["tree"] = node
    if independent:
        tree["independent"] = independent
    data = normalise(tree, str(root))
    surface_of(data, str(root))
    return data


def render(data: dict[str, Any], folder_name: str) -> str:
    """The YAML text of a built tree, with a header naming the folder it came from."""
    out: dict[str, Any] = {"name": data["name"]}
    if "description" in data:
        out["description"] = data["description"]
    out["tree"] = data["root"]
    if "independent" in data:
        out["independent"] = data["independent"]
    body = yaml.dump(out, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return (
        f"# Built by `tether bot build` from the bot folder {folder_name}/;\n"
        "# edit the folder and rebuild rather than editing this file.\n" + body
    )


# -- reading ----------------------------------------------------------------------------------


def _phase(folder: Path, name: str) -> dict[str, Any]:
    _files(folder, COMMON_FILES, subfolders=True)
    actions = [_action(path, action) for path, action in _numbered(folder, "action")]
    if not actions:
        raise _bad(folder, "holds no action folders (sub-folders such as 1_gather/)")
    node: dict[str, Any] = {"type": "sequence", "name": name, "children": actions}
    _describe(node, folder)
    return node


def _action(folder: Path, name: str) -> dict[str, Any]:
    _files(folder, ACTION_FILES, subfolders=False)
    instructions = _text(folder / "instructions.md")
    if instructions is None:
        raise _bad(folder / "instructions.md", "is missing or empty: an action needs instructions")
    instruct: dict[str, Any] = {"instruct": instructions}
    writes = _lines(folder / "writes.txt")
    for number, path in enumerate(writes, 1):
        if not re.match(WRITE_PATH_PATTERN, path):
            raise _bad(folder / "writes.txt", f"line {number}: {path!r} is not a var path")
    if writes:
        instruct["writes"] = writes
    steps: list[dict[str, Any]] = [instruct]
    steps += [{"evaluate": c} for c in _lines(folder / "criteria.txt")]
    checks = folder / "checks.txt"
    for expression in _lines(checks):
        _check_expression(expression, checks)
        steps.append({"check": expression})
    node: dict[str, Any] = {"type": "action", "name": name, "steps": steps}
    _describe(node, folder)
    return node


def _describe(node: dict[str, Any], folder: Path) -> None:
    description = _text(folder / "description.md")
    if description is not None:
        node["description"] = description
    triggers = _lines(folder / "triggers.txt")
    if triggers:
        node["triggers"] = triggers


def _numbered(folder: Path, what: str) -> list[tuple[Path, str]]:
    """The sub-folders of `folder` in order, with their names: the numbered ones (`N_name`, the
    prefix dropped) by number, then the unnumbered ones by name, as agile_bot finds a folder by
    its exact name or by its name after the prefix. Two folders claiming one number or one name
    are refused."""
    numbered: dict[int, tuple[Path, str]] = {}
    named: dict[str, Path] = {}
    for path in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        match = _NUMBERED.match(path.name)
        name = match.group(2) if match else path.name
        _check_name(name, path, f"the {what} name")
        if name in named:
            raise _bad(path, f"claims the {what} name {name!r} of {named[name].name}")
        named[name] = path
        if match is not None:
            number = int(match.group(1))
            if number in numbered:
                raise _bad(path, f"has the same number as {numbered[number][0].name}")
            numbered[number] = (path, name)
    unnumbered = sorted((name, path) for name, path in named.items() if path.name == name)
    return [numbered[n] for n in sorted(numbered)] + [(path, name) for name, path in unnumbered]


def _files(folder: Path, allowed: tuple[str, ...], *, subfolders: bool) -> None:
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_dir():
            if not subfolders:
                raise _bad(path, "is a folder inside an action folder; actions hold files only")
            continue
        if path.name not in allowed:
            raise _bad(path, f"is not a bot file; this folder takes {', '.join(allowed)}")


def _text(path: Path) -> str | None:
    """The file's text without surrounding blank space; None when absent or blank."""
    if not path.exists():
        return None
    text = _read(path).strip()
    return text or None


def _lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    items: list[str] = []
    for line in _read(path).splitlines():
        item = line.strip()
        if not item or item.startswith("#"):
            continue
        items.append(item[2:].strip() if item.startswith("- ") else item)
    return items


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(path, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _check_name(name: str, path: Path, what: str) -> None:
    if not re.match(NAME_PATTERN, name):
        raise _bad(path, f"{what} {name!r} must be {KIND_PHRASES['name']}")


def _check_expression(expression: str, path: Path) -> None:
    from tether.tree.expressions import check_expression

    try:
        check_expression(expression)
    except TetherError as exc:
        raise _bad(path, f"{expression!r} is not a valid CEL expression: {exc.message}") from None


def _bad(path: Path, problem: str) -> TetherError:
    return TetherError("invalid_tree", f"{path}: {problem}", file=str(path))


class _Dumper(yaml.SafeDumper):
    """Block style throughout; texts of several lines as literal blocks (`|`)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_text)

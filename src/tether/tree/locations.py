"""Where things are in a tree file: parsing text with positions, key paths, located errors.

Owns: turning YAML or JSON text into plain data plus a `Locator` that finds the 1-based line and
column of any key path (from PyYAML's composer node marks, looked up only when an error needs
one), the key path notation (`tree.children[1].steps[0].check`), and building the
`TetherError` whose message reads `file:line:col: problem at key.path (hint)`.

Does not own: what a valid tree is (`model.py`, `load.py`) or reading files from disk.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from typing import Any, NoReturn

import yaml

from tether.errors import TetherError

Path = tuple[str | int, ...]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_$-]+$")


def format_path(path: Path) -> str:
    """`("tree", "children", 1, "name")` -> `tree.children[1].name`; the empty path is `(root)`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out or "(root)"


class Locator:
    """Finds positions in one parsed document. A lookup falls back to the nearest ancestor it
    can find, so an error in a file always carries a position (1:1 for an empty file); data
    that never was text (`in_file=False`) has none."""

    def __init__(self, root: yaml.Node | None, *, in_file: bool = True) -> None:
        self._root = root
        self._default = (1, 1) if in_file else None

    def _walk(self, path: Path) -> tuple[yaml.Node | None, yaml.Node | None]:
        """The node at `path` and the key node that names it (either may be None)."""
        node, key = self._root, None
        for part in path:
            if isinstance(node, yaml.MappingNode):
                found = [(k, v) for k, v in node.value if str(k.value) == str(part)]
                if not found:
                    return node, key
                key, node = found[-1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if part >= len(node.value):
                    return node, key
                key, node = None, node.value[part]
            else:
                return node, key
        return node, key

    def value(self, path: Path) -> tuple[int, int] | None:
        node, _ = self._walk(path)
        return self._position(node)

    def key(self, path: Path) -> tuple[int, int] | None:
        node, key = self._walk(path)
        return self._position(key if key is not None else node)

    def _position(self, node: yaml.Node | None) -> tuple[int, int] | None:
        if node is None:
            return self._default
        return node.start_mark.line + 1, node.start_mark.column + 1

    def duplicate_key(self) -> tuple[Path, str] | None:
        """The first key given twice in one mapping, as (path of the mapping, key)."""
        return _find_duplicate(self._root, ())


def _find_duplicate(node: yaml.Node | None, path: Path) -> tuple[Path, str] | None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            if name in seen:
                return path, name
            seen.add(name)
            found = _find_duplicate(value, (*path, name))
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found = _find_duplicate(item, (*path, index))
            if found:
                return found
    return None


@dataclass(frozen=True)
class Document:
    """One parsed file: its plain data, where its parts are, and the name errors show for it."""

    data: Any
    locator: Locator
    display: str


def parse(text: str, display: str, *, as_json: bool) -> Document:
    """Parse YAML (or JSON, with json's own error positions) into a `Document`."""
    if as_json:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            position = (exc.lineno, exc.colno)
            raise _located_error(display, position, f"malformed JSON: {exc.msg}") from None
        # JSON forbids raw tabs inside strings, so tabs are layout only: spaces keep the columns
        # and let the YAML composer (which rejects tab indentation) find positions.
        return Document(data, Locator(_compose(text.replace("\t", " "))), display)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        _raise_yaml(exc, display)
    finally:
        loader.dispose()
    return Document(data, Locator(node), display)


def _compose(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None


def _raise_yaml(exc: yaml.YAMLError, display: str) -> NoReturn:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    message = f"malformed YAML: {problem}" + (f" ({context})" if context else "")
    position = (mark.line + 1, mark.column + 1) if mark else None
    raise _located_error(display, position, message) from None


def _located_error(
    display: str,
    position: tuple[int, int] | None,
    problem: str,
    *,
    shown: Path = (),
    key: Path = (),
    tail: str = "",
    code: str = "invalid_tree",
    **details: Any,
) -> TetherError:
    """`file:line:col: problem at shown.path tail`, with the parts also as details."""
    where = f" at {format_path(shown)}" if shown else ""
    place = display
    if position is not None:
        place += f":{position[0]}:{position[1]}"
        details.update(line=position[0], column=position[1])
    return TetherError(
        code,
        f"{place}: {problem}{where}{tail}",
        file=display,
        key=format_path(key),
        **details,
    )


@dataclass(frozen=True)
class Where:
    """A place in a document: the key path of a value, plus a note for fragments saying which
    `$ref` brought the file in."""

    doc: Document
    path: Path = ()
    via: str = ""

    def __truediv__(self, part: str | int) -> Where:
        return Where(self.doc, (*self.path, part), self.via)

    def fail(
        self,
        problem: str,
        *,
        hint: str = "",
        at_key: bool = False,
        shown: Path | None = None,
        after: str = "",
        code: str = "invalid_tree",
        **details: Any,
    ) -> NoReturn:
        """Raise a located error. The position is the value at this path, or the key naming it
        (`at_key`); the message names the path `shown` (default: this path), then `after`."""
        locate = self.doc.locator.key if at_key else self.doc.locator.value
        tail = f": {after}" if after else ""
        tail += f" ({hint})" if hint else ""
        tail += f" (in a fragment included from {self.via})" if self.via else ""
        raise _located_error(
            self.doc.display,
            locate(self.path),
            problem,
            shown=self.path if shown is None else shown,
            key=self.path,
            tail=tail,
            code=code,
            **details,
        )


def plain(value: Any, where: Where) -> Any:
    """`value` as plain JSON data: YAML dates become ISO text; non-text keys and other YAML-only
    values are errors."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                (where / str(key)).fail(f"key {key!r} is not text", hint="quote it", at_key=True)
            out[key] = plain(item, where / key)
        return out
    if isinstance(value, list):
        return [plain(item, where / i) for i, item in enumerate(value)]
    if isinstance(value, datetime.date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    where.fail(f"a {type(value).__name__} value cannot be stored as JSON")

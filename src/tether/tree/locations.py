"""Documents (tree files and guard configurations): reading them, parsing them with positions,
key paths, located errors.

Owns: reading a document file safely (`read_text`: regular files only, a FIFO never blocks, at
most a given number of bytes); turning YAML or JSON text into plain data plus a `Locator` that
finds the 1-based line and column of any key path (from PyYAML's composer node marks, looked up
only when an error needs one); the limits every document obeys (`MAX_DEPTH` levels of nesting;
no YAML anchors, aliases, merge keys or tags other than `!!str`, `!!seq` and `!!map`), checked
while composing so that nothing expands or recurses first; the key path notation
(`tree.children[1].steps[0].check`); and building the `TetherError` whose message reads
`file:line:col: problem at key.path (hint)`. No error ever quotes the text of the file: a
problem names the file, the position and the key path.

Does not own: what a valid tree is (`model.py`, `load.py`) or a valid guard configuration
(`tether.guard.rules.config`), nor which files a load may read (`load.py` confines `$ref`).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, NoReturn

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor

from tether.errors import TetherError

Path = tuple[str | int, ...]

MAX_DEPTH = 100
"""How deeply lists and mappings may nest in one document (a tree level takes two: a node and
its `children`)."""

MAX_LOAD_BYTES = 4 * 1024 * 1024
"""The most one load reads: a tree file with all its `$ref` fragments, or one guard
configuration file."""

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_$-]+$")
_TAGS = {None, "!", *(f"tag:yaml.org,2002:{name}" for name in ("str", "seq", "map"))}
_MERGE = "tag:yaml.org,2002:merge"
_COLLECTIONS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


class Unreadable(Exception):
    """A document file that cannot be read; the message says why, never what it holds."""


class TooLarge(Unreadable):
    """A document file that holds more bytes than the reader was allowed."""


def read_text(path: str | os.PathLike[str], limit: int) -> str:
    """The UTF-8 text of the regular file at `path` if it holds at most `limit` bytes.

    Directories, devices, FIFOs and sockets are refused before they are opened (and again after,
    in case the file was swapped); the file is opened non-blocking, so a FIFO can never block,
    and at most `limit + 1` bytes are read, so an endless file cannot spin."""
    try:
        _regular(os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise Unreadable(exc.strerror or "cannot be opened") from None
    try:
        _regular(os.fstat(fd))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise Unreadable(exc.strerror or "cannot be read") from None
    finally:
        os.close(fd)
    if size > limit:
        raise TooLarge(f"larger than {limit} bytes")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None


def _regular(status: os.stat_result) -> None:
    for test, kind in _NOT_REGULAR:
        if test(status.st_mode):
            raise Unreadable(f"not a regular file ({kind})")


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


class _Refused(yaml.MarkedYAMLError):
    """A YAML construct documents may not use; `problem` is the whole message."""

    def __init__(self, problem: str, mark: yaml.Mark, **details: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.details = details


class _Composer(Composer):
    """PyYAML's composer, refusing what a plain document has no use for before it can expand
    or recurse: anchors and aliases (the "billion laughs"), merge keys, tags other than `_TAGS`
    and nesting deeper than `MAX_DEPTH`."""

    peek_event: Any  # the parser's, later in the loader's bases
    depth: int
    flows: list[tuple[str, Any]]  # the flow collections being composed, innermost last

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or event.anchor is not None:
            problem = "YAML anchors and aliases (&name, *name) are not allowed"
            raise _Refused(problem, event.start_mark)
        if event.tag not in _TAGS:
            raise _Refused("YAML tags are not allowed (except !!str)", event.start_mark)
        if not isinstance(event, _COLLECTIONS):
            node = super().compose_node(parent, index)
            if node is not None and node.tag == _MERGE:
                problem = "YAML merge keys (<<) are not allowed (quote '<<' to mean the text)"
                raise _Refused(problem, node.start_mark)
            return node
        if self.depth >= MAX_DEPTH:
            raise _too_deep(event.start_mark)
        self.depth += 1
        if event.flow_style:
            kind = "sequence" if isinstance(event, yaml.SequenceStartEvent) else "mapping"
            self.flows.append((f"flow {kind}", event.start_mark))
        node = super().compose_node(parent, index)
        if event.flow_style:
            self.flows.pop()
        self.depth -= 1
        return node


def _too_deep(mark: Any) -> _Refused:
    return _Refused(
        f"nested more than {MAX_DEPTH} levels deep (the limit for one document)",
        mark,
        depth_limit=MAX_DEPTH,
    )


def _timestamp(loader: SafeConstructor, node: yaml.ScalarNode) -> Any:
    """A YAML date or time; one that does not exist is a located error, not a crash."""
    try:
        return SafeConstructor.construct_yaml_timestamp(loader, node)
    except ValueError:
        raise _Refused(
            "a date or time that does not exist (quote it to keep it as text)", node.start_mark
        ) from None


_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Composer, _SafeLoader):  # type: ignore[misc]
    """The safe loader (libyaml's parser when PyYAML has it) with `_Composer`."""

    def __init__(self, text: str) -> None:
        _SafeLoader.__init__(self, text)
        self.anchors = {}
        self.depth = 0
        self.flows = []


class _PythonLoader(_Composer, yaml.SafeLoader):
    """`_Composer` on PyYAML's own parser, which reads tokens as the composer asks for them.
    The libyaml of newer PyYAML wheels scans a flow collection to its end before the first
    event and refuses one nested past its own limit (1,000) there; this loader finds where the
    text first passes `MAX_DEPTH` instead, so a depth refusal reads the same whoever made it."""

    def __init__(self, text: str) -> None:
        yaml.SafeLoader.__init__(self, text)
        self.anchors = {}
        self.depth = 0
        self.flows = []


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def _depth_refusal(exc: yaml.YAMLError, text: str) -> yaml.YAMLError:
    """`exc`, or `_too_deep` where `exc` is the parser's own nesting limit."""
    if "maximum nesting depth" not in str(getattr(exc, "problem", "")):
        return exc
    loader = _PythonLoader(text)
    try:
        loader.get_single_node()
    except _Refused as refused:
        return refused
    except yaml.YAMLError:
        pass
    finally:
        loader.dispose()
    return _too_deep(getattr(exc, "problem_mark", None))


def parse(text: str, display: str, *, as_json: bool) -> Document:
    """Parse YAML (or JSON, with json's own error positions) into a `Document`, within the
    limits in the module docstring."""
    if as_json:
        _check_json_depth(text, display)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            position = (exc.lineno, exc.colno)
            raise _located_error(display, position, f"malformed JSON: {exc.msg}") from None
        # JSON forbids raw tabs inside strings, so tabs are layout only: spaces keep the columns
        # and let the YAML composer (which rejects tab indentation) find positions.
        try:
            return Document(data, Locator(_compose(text.replace("\t", " "))), display)
        except yaml.YAMLError:
            return Document(data, Locator(None), display)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        refused = _depth_refusal(exc, text)
        _raise_yaml(refused, display, text, loader.flows[-1] if loader.flows else None)
    finally:
        loader.dispose()
    return Document(data, Locator(node), display)


def _compose(text: str) -> yaml.Node | None:
    loader = _Loader(text)
    try:
        return loader.get_single_node()  # type: ignore[no-any-return]
    finally:
        loader.dispose()


def _check_json_depth(text: str, display: str) -> None:
    """Refuse JSON nested deeper than `MAX_DEPTH` before the parser recurses into it."""
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        first = token.group()[0]
        if first in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                offset = token.start()
                line = text.count("\n", 0, offset) + 1
                column = offset - text.rfind("\n", 0, offset)
                refused = _too_deep(yaml.Mark(display, offset, line - 1, column - 1, None, 0))
                _raise_yaml(refused, display, text)
        elif first in "]}":
            depth -= 1


def _raise_yaml(
    exc: yaml.YAMLError, display: str, text: str, flow: tuple[str, Any] | None = None
) -> NoReturn:
    """A located error for a parser's complaint, from its fixed texts and marks only: never
    the snippet of the file that PyYAML would print. Where the construct it was reading began
    is named too: the innermost open flow collection `flow` (`[` or `{`), which at the end of
    `text` was never closed, or else the parser's own context."""
    mark = getattr(exc, "problem_mark", None)
    position = (mark.line + 1, mark.column + 1) if mark else None
    if isinstance(exc, _Refused):
        raise _located_error(display, position, str(exc.problem), **exc.details) from None
    problem = getattr(exc, "problem", None) or "the text is not YAML"
    context = getattr(exc, "context", None)
    began = getattr(exc, "context_mark", None)
    if flow is not None and (context is None or context.startswith("while parsing a flow")):
        at_end = mark is not None and mark.index >= len(text.rstrip())
        kind, began = flow
        context = (
            f"the {kind} opened at {{}} was never closed"
            if at_end
            else f"in the {kind} opened at {{}}"
        )
    elif context is not None and began is not None:
        context += " that began at {}"
    details: dict[str, Any] = {}
    if context is not None and began is not None:
        line, column = began.line + 1, began.column + 1
        details = {"context_line": line, "context_column": column}
        context = context.format(f"line {line}, column {column}")
    message = f"malformed YAML: {problem}" + (f" ({context})" if context else "")
    raise _located_error(display, position, message, **details) from None


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

"""Dotted paths into the `var` and `const` scopes: parsing, reading, copy-on-write writing.

Owns the path syntax (`a.b.0.c`; a leading `$VAR.`, `$LOCAL.`, `$CONST.` or `$GLOBAL.` is
accepted and dropped) and its errors, and `named_values`: the values a text's `$VAR.x` (and
`$LOCAL.x`, `$CONST.x`, `$GLOBAL.x`) mentions name. It does not decide who may write (the engine
does).
"""

from __future__ import annotations

import json
import re

from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PREFIXES = ("$VAR.", "$LOCAL.", "$CONST.", "$GLOBAL.")
_MENTION = re.compile(r"\$(VAR|LOCAL|CONST|GLOBAL)((?:\.[A-Za-z0-9_-]+)+)")
_SCOPES = {"VAR": "var", "LOCAL": "var", "CONST": "const", "GLOBAL": "const"}


def named_values(text: str, state: dict[str, Any]) -> dict[str, Any]:
    """Each `$VAR.path` (`$LOCAL.`, `$CONST.`, `$GLOBAL.`) that `text` mentions, spelled as it
    is there, with its value in `state` (None when it is not set), in order of mention."""
    out: dict[str, Any] = {}
    for match in _MENTION.finditer(text):
        scope = state[_SCOPES[match.group(1)]]
        try:
            out[match.group(0)] = read_path(scope, match.group(2)[1:])
        except TetherError:
            out[match.group(0)] = None
    return out


def parse_path(path: str) -> list[str]:
    """Split a dotted path into its segments, refusing empty or malformed ones."""
    text = path.strip()
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    parts = text.split(".")
    if not text or any(not p or p != p.strip() for p in parts):
        raise TetherError(
            "invalid_path",
            f"bad var path {path!r}: use dot-separated keys such as 'build.tag' "
            "(no empty segments, no surrounding spaces)",
            path=path,
        )
    return parts


def read_path(scope: dict[str, Any], path: str | None, scope_name: str = "var") -> Any:
    """The value at `path` (the whole scope when `path` is None or empty)."""
    if not path:
        return scope
    node: Any = scope
    walked: list[str] = []
    for part in parse_path(path):
        walked.append(part)
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise TetherError(
                "not_found",
                f"${scope_name.upper()}.{'.'.join(walked)} is not set",
                path=path,
            )
    return node


def write_path(
    scope: dict[str, Any], path: str, value: Any, fresh: dict[int, Any] | None = None
) -> dict[str, Any]:
    """A copy of `scope` with `value` at `path`; objects are created on the way, and only the
    containers along the path are copied. Several writes in a row share one `fresh` map: a
    container copied (or created) by an earlier write is in it and is written in place, so
    that N writes cost N path lengths rather than N times the scope's size."""
    fresh = {} if fresh is None else fresh
    parts = parse_path(path)
    root = _own(scope, fresh)
    node: Any = root
    for i, part in enumerate(parts[:-1]):
        child = _child(node, part)
        if child is not None and not isinstance(child, dict | list):
            where = ".".join(parts[: i + 1])
            raise TetherError(
                "invalid_path",
                f"cannot write {path!r}: $VAR.{where} holds {json.dumps(child)}, not an object",
                path=path,
            )
        child = _own({} if child is None else child, fresh)
        _set(node, part, child, path)
        node = child
    _set(node, parts[-1], value, path)
    return root


def _own(container: Any, fresh: dict[int, Any]) -> Any:
    """`container` itself if it is in `fresh`, else a shallow copy of it, added to `fresh`
    (which holds each copy, so that no id in it can be reused by another object)."""
    if fresh.get(id(container)) is container:
        return container
    copy = dict(container) if isinstance(container, dict) else list(container)
    fresh[id(copy)] = copy
    return copy


def _child(node: dict[str, Any] | list[Any], part: str) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return None


def _set(node: dict[str, Any] | list[Any], part: str, value: Any, path: str) -> None:
    if isinstance(node, dict):
        node[part] = value
    elif part.isdigit() and int(part) < len(node):
        node[int(part)] = value
    else:
        raise TetherError(
            "invalid_path",
            f"cannot write {path!r}: {part!r} is not an index of the list it names",
            path=path,
        )

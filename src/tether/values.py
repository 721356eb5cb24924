"""What any caller may hand Tether to store, checked once for every interface.

Owns:
- the parsing of an answer's values (`parse_value`: JSON or text);
- the check that a value can be stored as standard JSON (`check_value`: no NaN or infinity, no
  text that is not UTF-8, nesting no deeper than `MAX_DEPTH`, nothing over `MAX_VALUE_BYTES`)
  and that one answer writes no more than `MAX_VALUES` values (`check_values`, `check_answer`);
- the cut that keeps a tool's input or a caller's echoed text from swelling a trace (`bounded`).

It does not store anything (the stores do) or decide what an answer does (the engine does); the
verb layer (`tether.verbs`) calls it before each commit.
"""

from __future__ import annotations

import json
import math

from tether.engine import public as engine
from tether.engine.varpath import parse_path
from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# How deeply objects and lists written to $VAR or $CONST may nest inside one another, the keys
# of the dotted path they are written at included. Deeper values are refused (`invalid_value`):
# JSON readers and encoders recurse (Python's stops near 1,000 levels) and no workflow needs it.
MAX_DEPTH = 100
# The largest value, note or thought one call may hand in, counted as the UTF-8 bytes of its text
# and keys (plus a few bytes per other item): larger ones are `too_large`. A state is rewritten
# at every commit, so what it holds is what every later step costs.
MAX_VALUE_BYTES = 1024 * 1024
# The most $VAR writes one answer's `values` may carry.
MAX_VALUES = 1000
# Python converts integers of up to 4,300 digits to text; longer ones cannot be written as JSON.
_MAX_INT_BITS = 14_000
_LONG_INTEGER = "holds an integer too long to store (more than 4,300 digits)"


def parse_value(text: str, *, strict_json: bool = False) -> Any:
    """A `var` value: JSON when it parses, else the text itself (or an error, if `strict_json`).
    `NaN`, `Infinity` and numbers too large for a float (`1e999`) are not JSON and are refused
    (`invalid_value`) rather than taken for text, as are values nested too deeply to parse."""
    check_value(text, "the value")
    constants: list[str] = []
    try:
        value = json.loads(text, parse_constant=lambda name: constants.append(name))
    except json.JSONDecodeError as exc:
        if strict_json:
            raise TetherError(
                "invalid_json",
                f"value is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                line=exc.lineno,
                column=exc.colno,
            ) from None
        return text
    except RecursionError:
        raise _unstorable("the value", f"nests deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # an integer longer than Python converts
        raise _unstorable("the value", _LONG_INTEGER) from None
    if constants:
        name = constants[0]
        raise TetherError(
            "invalid_value",
            f"the value {name} is not a JSON number (JSON has no NaN or Infinity): write a "
            f"number, or quote it ('\"{name}\"') to store the text",
        )
    return value


def check_value(value: Any, what: str, depth: int = 0) -> None:
    """Refuse (`invalid_value`, naming `what`) a value that cannot be stored as standard JSON: a
    NaN or an infinity, text that is not UTF-8 (bytes a command line or a file passed through
    undecoded), a type JSON lacks, or objects and lists nested more than `MAX_DEPTH` levels deep
    counting the `depth` levels above the value (the keys of its path); and (`too_large`) one
    larger than `MAX_VALUE_BYTES`. Walks without recursion, so no value is too deep to be
    refused."""
    if depth > MAX_DEPTH:
        raise _unstorable(what, f"is written {depth} keys deep, deeper than {MAX_DEPTH} levels")
    stack: list[tuple[Any, int]] = [(value, depth)]
    size = 0
    while stack:
        item, level = stack.pop()
        size += _check_text(item, what) if isinstance(item, str) else 8
        if size > MAX_VALUE_BYTES:
            raise _too_large(
                what,
                f"{what} is larger than {MAX_VALUE_BYTES:,} bytes, the most one call may hand "
                "in: keep large content in a file and store its path",
                MAX_VALUE_BYTES,
            )
        if isinstance(item, (str, bool)) or item is None:
            continue
        elif isinstance(item, int):
            if item.bit_length() > _MAX_INT_BITS:
                raise _unstorable(what, _LONG_INTEGER)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise _unstorable(
                    what,
                    f"holds {item!r}, which JSON cannot hold (no NaN or infinity; a number "
                    "written beyond a float's range, such as 1e999, is infinite)",
                )
        elif isinstance(item, (dict, list, tuple)):
            if level >= MAX_DEPTH:
                raise _unstorable(
                    what,
                    f"nests deeper than {MAX_DEPTH} levels (objects and lists inside one another, "
                    "counting the keys of its path)",
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        raise _unstorable(what, f"has the key {key!r}, which is not text")
                    size += _check_text(key, what)
                    stack.append((child, level + 1))
            else:
                stack.extend((child, level + 1) for child in item)
        else:
            raise _unstorable(what, f"holds a {type(item).__name__}, which is not a JSON value")


def _check_text(text: str, what: str) -> int:
    """The length of `text` in UTF-8; `invalid_value` if it is not UTF-8 text."""
    try:
        return len(text.encode())
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end]
        raise _unstorable(
            what,
            f"is not UTF-8 text: it holds {bad!r} at character {exc.start}, from bytes "
            "that are not UTF-8 (check the encoding of the argument or file)",
        ) from None


def _too_large(what: str, message: str, limit: int) -> TetherError:
    return TetherError("too_large", message, argument=what, limit=limit)


def _unstorable(what: str, reason: str) -> TetherError:
    return TetherError("invalid_value", f"{what} {reason}", argument=what)


EVIDENCE_TEXT = 1000  # characters of each string a `tool` entry keeps
_EVIDENCE_DEPTH = 8  # nesting levels of a `tool` entry's input kept
_EVIDENCE_ITEMS = 100  # items of each list or mapping kept


def bounded(value: Any, depth: int = 0) -> Any:
    """`value` with every string cut at `EVIDENCE_TEXT` characters (the cut marked with how much
    was left out), lists and mappings cut at `_EVIDENCE_ITEMS` items and nesting at
    `_EVIDENCE_DEPTH` levels, so that a tool's input can never swell a trace."""
    if isinstance(value, str):
        if len(value) <= EVIDENCE_TEXT:
            return value
        return value[:EVIDENCE_TEXT] + f"…[cut {len(value) - EVIDENCE_TEXT} characters]"
    if isinstance(value, dict | list) and depth >= _EVIDENCE_DEPTH:
        return "…[cut: nested too deep]"
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): bounded(v, depth + 1) for k, v in items[:_EVIDENCE_ITEMS]}
        if len(items) > _EVIDENCE_ITEMS:
            out["…"] = f"[cut {len(items) - _EVIDENCE_ITEMS} keys]"
        return out
    if isinstance(value, list):
        kept = [bounded(v, depth + 1) for v in value[:_EVIDENCE_ITEMS]]
        if len(value) > _EVIDENCE_ITEMS:
            kept.append(f"…[cut {len(value) - _EVIDENCE_ITEMS} items]")
        return kept
    return value


def check_values(values: dict[str, Any] | None) -> None:
    """Refuse (`too_large`) the `values` of one answer or one close past `MAX_VALUES` writes."""
    if values is not None and len(values) > MAX_VALUES:
        raise _too_large(
            "values",
            f"the values hold {len(values):,} writes; one answer takes at most {MAX_VALUES:,}",
            MAX_VALUES,
        )


def check_answer(answer: engine.Answer) -> None:
    """`check_value` for each part of an answer; a value written to $VAR counts its path's keys
    in its depth; `values` hold at most `MAX_VALUES` writes."""
    check_values(getattr(answer, "values", None))
    for part in type(answer).__slots__:
        if isinstance(answer, engine.VarWrite) and part == "value":
            where = f"the value for {answer.path!r}"
            check_value(answer.value, where, len(parse_path(answer.path)))
        else:
            check_value(getattr(answer, part), f"the {part}")

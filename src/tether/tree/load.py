"""Loading a tree: reading files, resolving `$ref` fragments, strict validation, normalisation.

Owns: `load_tree` (a file), `load_tree_text` (text in memory) and `normalise` (already-parsed
data); telling the three spellings apart (native wrapper, abtree wrapper, behaviors-sh root
node); walking the nodes once, checking every key against the tables in `model.py` and building
the normalised form that the engine runs (`type`, `name`, then `children`/`policy`/`steps`, then
`retries`/`optional`/`invert`/`repeat`/`for_each`/`when`/`description`/`triggers` when they say
something, a loop's `max` and `as` filled in); merging `state`; checking every `check`, `when`,
`for_each.in` and `repeat.until` with the CEL compiler.

A load reads only inside one folder, its root: every `$ref` must resolve (symbolic links and
`..` followed) to a file under it, the caller's root when one is given (a server's `--root`),
else the folder of the top-level tree file. Every file it reads is a regular file, and together
they hold at most `MAX_LOAD_BYTES`.

Every problem raises `TetherError`: `not_found` for a tree file that does not exist,
`invalid_expression` for CEL that does not compile, `forbidden` for a `$ref` outside the root,
`invalid_tree` for everything else; each names the file, line, column and key path, and, for a
misspelt key, the key that was meant. No error quotes a file that is not a tree.

Does not own: reading and parsing a file, positions and the error text layout
(`locations.py`), what each key means (`model.py`), CEL itself (`expressions.py`), hashing
(`canonical.py`).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.tree.canonical import Tree, tree_hash
from tether.tree.expressions import check_expression
from tether.tree.locations import (
    MAX_LOAD_BYTES,
    Document,
    Locator,
    TooLarge,
    Unreadable,
    Where,
    format_path,
    parse,
    plain,
    read_text,
)
from tether.tree.model import (
    COMMON_FIELDS,
    FOR_EACH_FIELDS,
    FOR_EACH_MAX,
    KIND_PHRASES,
    KIND_SCHEMAS,
    NODE_FIELDS,
    REF_FIELDS,
    REPEAT_FIELDS,
    REPEAT_MAX,
    SCOPE_ALIASES,
    STATE_FIELDS,
    STEP_FIELDS,
    STEP_KINDS,
    STEP_KINDS_TEXT,
    TYPE_ALIASES,
    WRAPPER_FIELDS,
    Field,
    conforms,
)

_WRITE_PREFIXES = ("$VAR.", "$LOCAL.")
_SAME_SCOPE = {**SCOPE_ALIASES, **{scope: alias for alias, scope in SCOPE_ALIASES.items()}}


def load_tree(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None) -> Tree:
    """Load, validate and normalise the tree file at `path` (YAML, or JSON for `.json`); it and
    its `$ref` files must lie under `root` (default: the folder of `path`)."""
    file = Path(path).resolve()
    if not file.exists():
        raise TetherError("not_found", f"{path}: no such tree file", file=str(path))
    if root is None:
        loader = _Loader(file.parent, f"the tree's folder {_display(file.parent)}")
    else:
        loader = _Loader(Path(root).resolve(), f"the allowed root {root}")
    top = Where(Document(None, Locator(None, in_file=False), str(path)))
    if not loader.inside(file):
        top.fail(f"{path} is outside {loader.scope}", code="forbidden")
    doc = loader.document(file, top)
    data = loader.tree(doc, file.parent, (file,))
    return Tree(data, tree_hash(data), str(file))


def load_tree_text(text: str, source_name: str = "<text>", *, base_dir: str | None = None) -> Tree:
    """Load a tree from text; `source_name` names it in errors (a `.json` name parses JSON) and
    `$ref` paths resolve against, and must stay under, `base_dir` (default: the current
    directory)."""
    doc = _parse(text, source_name, as_json=source_name.endswith(".json"))
    loader = _Loader.under(base_dir)
    data = loader.tree(doc, loader.root, ())
    return Tree(data, tree_hash(data), source_name)


def normalise(raw: Any, source: str = "<data>", *, base_dir: str | None = None) -> dict[str, Any]:
    """Validate and normalise already-parsed tree data (errors name key paths, not lines);
    `$ref` paths resolve as for `load_tree_text`."""
    doc = Document(raw, Locator(None, in_file=False), source)
    loader = _Loader.under(base_dir)
    return loader.tree(doc, loader.root, ())


def _parse(text: str, display: str, *, as_json: bool) -> Document:
    """Parse a file's text; a key given twice in one mapping is an error."""
    doc = parse(text, display, as_json=as_json)
    duplicate = doc.locator.duplicate_key()
    if duplicate:
        path, key = duplicate
        Where(doc, (*path, key)).fail(f"duplicate key {key!r}", at_key=True, shown=path)
    return doc


def _display(path: Path) -> str:
    """A file as errors show it: relative to the current directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _describe(value: Any, *, content: bool = True) -> str:
    """What `value` is, for an error; its text only when `content` (never for the whole of a
    file, which may be anything but a tree)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}" if content else "a boolean"
    if isinstance(value, int | float):
        return f"number {value}" if content else "a number"
    if isinstance(value, str):
        return f"string {value!r}" if content else "a string"
    if isinstance(value, list):
        return "an empty list" if not value else f"a list of {len(value)}"
    return "a mapping" if isinstance(value, dict) else type(value).__name__


def _version(value: Any) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True)
class _Context:
    """Where `$ref` paths resolve from, and the files being included (to name a cycle)."""

    base: Path
    chain: tuple[Path, ...]


class _Loader:
    """One load: the folder it may read (`root`, named in errors as `scope`), the bytes it may
    still read, parsed fragment files and the state merged from every node."""

    def __init__(self, root: Path, scope: str) -> None:
        self.root = root
        self.scope = scope
        self.budget = MAX_LOAD_BYTES
        self.docs: dict[Path, Document] = {}
        self.scopes: dict[str, dict[str, Any]] = {"var": {}, "const": {}}

    @classmethod
    def under(cls, base_dir: str | None) -> _Loader:
        """A load of text or data whose `$ref` paths stay under `base_dir` (default: here)."""
        root = Path(base_dir or ".").resolve()
        return cls(root, f"the base folder {_display(root)}")

    def inside(self, file: Path) -> bool:
        """Whether the resolved `file` lies under the root."""
        return os.path.commonpath([file, self.root]) == str(self.root)

    def document(self, file: Path, referrer: Where) -> Document:
        doc = self.docs.get(file)
        if doc is None:
            try:
                text = read_text(file, self.budget)
            except TooLarge:
                referrer.fail(
                    f"cannot read {_display(file)}: the tree and its fragments hold more than "
                    f"{MAX_LOAD_BYTES} bytes",
                    byte_limit=MAX_LOAD_BYTES,
                )
            except Unreadable as exc:
                referrer.fail(f"cannot read {_display(file)}: {exc}")
            self.budget -= len(text.encode("utf-8"))
            doc = _parse(text, _display(file), as_json=file.suffix == ".json")
            self.docs[file] = doc
        return doc

    # -- the file root ---------------------------------------------------------------------

    def tree(self, doc: Document, base: Path, chain: tuple[Path, ...]) -> dict[str, Any]:
        raw, where, context = doc.data, Where(doc), _Context(base, chain)
        if not isinstance(raw, dict):
            where.fail(f"a tree file must be a mapping, got {_describe(raw, content=False)}")
        if "type" in raw or "$ref" in raw:
            if "tree" in raw:
                (where / "tree").fail(
                    "a file is either a wrapper ('tree:') or a node ('type:' at the root), not "
                    "both",
                    at_key=True,
                )
            root = self.node(raw, where, context)
            name, version = root["name"], _version(raw.get("version"))
            description = root.pop("description", None)
        else:
            self.keys(raw, WRAPPER_FIELDS, where, "a tree file")
            for key in ("$schema", "name", "version", "description"):
                self.field(raw, key, WRAPPER_FIELDS[key], where)
            name, version = raw["name"], _version(raw.get("version"))
            description = raw.get("description")
            self.state(raw.get("state"), where / "state")
            root = self.node(
                self.field(raw, "tree", WRAPPER_FIELDS["tree"], where), where / "tree", context
            )
        data: dict[str, Any] = {"name": name, "version": version}
        if description is not None:
            data["description"] = description
        data["state"] = self.scopes
        data["root"] = root
        return data

    # -- keys and values -------------------------------------------------------------------

    def keys(self, raw: dict[Any, Any], fields: dict[str, Field], where: Where, what: str) -> None:
        """Every key of `raw` must be one of `fields`."""
        for key in raw:
            if key in fields:
                continue
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            elsewhere = [t for t, extra in NODE_FIELDS.items() if key in extra]
            if close:
                hint = f"did you mean {close[0]!r}?"
            elif elsewhere and what.endswith(" node"):
                hint = f"{key!r} belongs to {' and '.join(elsewhere)} nodes"
            else:
                hint = f"{what} takes {', '.join(fields)}"
            (where / str(key)).fail(
                f"unknown key {key!r}", hint=hint, at_key=True, shown=where.path
            )

    def field(self, raw: dict[str, Any], key: str, field: Field, where: Where) -> Any:
        """`raw[key]` checked against its kind; None when it is absent and not required."""
        if key not in raw:
            if field.required:
                where.fail(f"missing key {key!r}")
            return None
        value = raw[key]
        if not conforms(value, KIND_SCHEMAS[field.kind]):
            (where / key).fail(f"{key} must be {KIND_PHRASES[field.kind]}, got {_describe(value)}")
        return value

    def expression(self, src: str, where: Where) -> None:
        try:
            check_expression(src)
        except TetherError as exc:
            line, column = exc.details["line"], exc.details["column"]
            where.fail(
                "invalid CEL expression",
                after=f"{line}:{column}: {exc.details['problem']}",
                code="invalid_expression",
                expression_line=line,
                expression_column=column,
            )

    def state(self, raw: Any, where: Where) -> None:
        """Merge one `state` block into the tree's scopes."""
        if raw is None:
            return
        if not isinstance(raw, dict):
            where.fail(f"state must be {KIND_PHRASES['state']}, got {_describe(raw)}")
        self.keys(raw, STATE_FIELDS, where, "state")
        for key in raw:
            scope = str(SCOPE_ALIASES.get(key, key))
            if _SAME_SCOPE[key] in raw:
                (where / key).fail(
                    f"{key!r} and {_SAME_SCOPE[key]!r} are the same scope; give one", at_key=True
                )
            values = plain(self.field(raw, key, STATE_FIELDS[key], where), where / key) or {}
            target = self.scopes[scope]
            for name, value in values.items():
                if name in target and target[name] != value:
                    (where / key / name).fail(
                        f"{scope} {name!r} is declared again with a different value", at_key=True
                    )
                target[name] = value

    # -- nodes -----------------------------------------------------------------------------

    def node(self, raw: Any, where: Where, context: _Context) -> dict[str, Any]:
        if not isinstance(raw, dict):
            shown = _describe(raw, content=bool(where.path))
            where.fail(f"a node must be a mapping, got {shown}")
        if "$ref" in raw:
            return self.ref(raw, where, context)
        if "type" not in raw:
            where.fail("a node needs a 'type'", hint=f"{KIND_PHRASES['node_type']}, or a '$ref'")
        kind = raw["type"]
        if not conforms(kind, KIND_SCHEMAS["node_type"]):
            close = difflib.get_close_matches(str(kind), KIND_SCHEMAS["node_type"]["enum"], n=1)
            hint = f"did you mean {close[0]!r}?" if close else KIND_PHRASES["node_type"]
            shown = repr(kind) if isinstance(kind, str) else _describe(kind)
            (where / "type").fail(f"unknown node type {shown}", hint=hint)
        kind = str(TYPE_ALIASES.get(kind, kind))
        fields = {**COMMON_FIELDS, **NODE_FIELDS[kind]}
        self.keys(raw, fields, where, f"a {kind} node")
        values = {key: self.field(raw, key, field, where) for key, field in fields.items()}
        if values["when"] is not None:
            self.expression(values["when"], where / "when")
        self.state(raw.get("state"), where / "state")
        out: dict[str, Any] = {"type": kind, "name": values["name"]}
        if kind == "action":
            out["steps"] = [
                self.step(s, where / "steps" / i) for i, s in enumerate(values["steps"])
            ]
        else:
            out["children"] = self.children(values["children"], where, context)
        if kind == "parallel":
            out["policy"] = self.policy(values["policy"], len(out["children"]), where)
        if values["retries"]:
            out["retries"] = values["retries"]
        if values["optional"]:
            out["optional"] = True
        if values.get("require_all"):
            out["require_all"] = True
        if values["invert"]:
            out["invert"] = True
        if values["repeat"] is not None:
            out["repeat"] = self.loop(values["repeat"], "repeat", where)
        if values["for_each"] is not None:
            out["for_each"] = self.loop(values["for_each"], "for_each", where)
        for key in ("when", "description", "triggers"):
            if values[key] is not None:
                out[key] = values[key]
        return out

    def loop(self, raw: Any, key: str, where: Where) -> dict[str, Any]:
        """A node's `for_each` or `repeat`, checked key by key, its defaults filled in."""
        at = where / key
        if not isinstance(raw, dict):
            at.fail(f"{key} must be {KIND_PHRASES[key]}, got {_describe(raw)}")
        fields = FOR_EACH_FIELDS if key == "for_each" else REPEAT_FIELDS
        self.keys(raw, fields, at, key)
        values = {name: self.field(raw, name, field, at) for name, field in fields.items()}
        if key == "for_each":
            self.expression(values["in"], at / "in")
            return {
                "in": values["in"],
                "as": values["as"] or "item",
                "max": values["max"] or FOR_EACH_MAX,
            }
        self.expression(values["until"], at / "until")
        return {"until": values["until"], "max": values["max"] or REPEAT_MAX}

    def children(self, raw: list[Any], where: Where, context: _Context) -> list[dict[str, Any]]:
        children: list[dict[str, Any]] = []
        first: dict[str, int] = {}
        for index, item in enumerate(raw):
            child = self.node(item, where / "children" / index, context)
            name = child["name"]
            if name in first:
                (where / "children" / index).fail(
                    f"duplicate name {name!r} among siblings (first at children[{first[name]}])"
                )
            first[name] = index
            children.append(child)
        return children

    def policy(self, policy: Any, count: int, where: Where) -> Any:
        if policy is None:
            return "all"
        if isinstance(policy, int) and policy > count:
            (where / "policy").fail(
                f"policy {policy} is more than the number of children ({count})"
            )
        return policy

    def step(self, raw: Any, where: Where) -> dict[str, Any]:
        if not isinstance(raw, dict):
            where.fail(f"a step must be a mapping such as {{instruct: ...}}, got {_describe(raw)}")
        self.keys(raw, STEP_FIELDS, where, "a step")
        kinds = [k for k in STEP_KINDS if k in raw]
        if len(kinds) != 1:
            found = f"found {' and '.join(kinds)}" if kinds else "found none"
            where.fail(f"a step takes exactly one of {STEP_KINDS_TEXT} ({found})")
        kind = kinds[0]
        text = self.field(raw, kind, STEP_FIELDS[kind], where)
        if kind == "check":
            self.expression(text, where / kind)
        out: dict[str, Any] = {kind: text}
        writes = self.field(raw, "writes", STEP_FIELDS["writes"], where)
        if writes is not None:
            if kind != "instruct":
                (where / "writes").fail("writes applies only to instruct steps", at_key=True)
            out["writes"] = [
                p.split(".", 1)[1] if p.startswith(_WRITE_PREFIXES) else p for p in writes
            ]
        return out

    def ref(self, raw: dict[str, Any], where: Where, context: _Context) -> dict[str, Any]:
        self.keys(raw, REF_FIELDS, where, "a $ref node")
        target = self.field(raw, "$ref", REF_FIELDS["$ref"], where)
        at = where / "$ref"
        if not target or target.startswith("#"):
            at.fail(
                f"$ref {target!r} is not a file path",
                hint="a $ref names a fragment file, relative to the file it is in",
            )
        file = (context.base / target).resolve()
        if not self.inside(file):
            at.fail(
                f"$ref {target!r} is outside {self.scope}",
                hint="a $ref may name only files under it",
                code="forbidden",
            )
        if file in context.chain:
            cycle = [*context.chain[context.chain.index(file) :], file]
            names = [os.path.relpath(f, cycle[0].parent) for f in cycle]
            at.fail(f"$ref cycle: {' -> '.join(names)}")
        if not file.exists():
            at.fail(f"$ref file {_display(file)} does not exist")
        doc = self.document(file, at)
        via = f"{where.doc.display} at {format_path(where.path)}"
        return self.node(
            doc.data, Where(doc, (), via), _Context(file.parent, (*context.chain, file))
        )

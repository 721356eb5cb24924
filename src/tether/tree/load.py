"""Loading a tree: reading files, resolving `$ref` fragments, strict validation, normalisation.

Owns: `load_tree` (a file), `load_tree_text` (text in memory) and `normalise` (already-parsed
data); telling the three spellings apart (native wrapper, abtree wrapper, behaviors-sh root
node); walking the nodes once, checking every key against the tables in `model.py` and building
the normalised form that the engine runs (`type`, `name`, then `children`/`policy`/`steps`, then
`retries`/`optional`/`invert`/`repeat`/`for_each`/`when`/`description`/`triggers`/`tools`/`writes`
when they say something, a loop's `max` and `as` filled in, a human step's `timeout` as seconds with
its `on_timeout`); trimming step texts (`trim_text`);
merging `state`; checking every `check`, `when`, `for_each.in` and `repeat.until` with the CEL
compiler; resolving `$ref`s (a fragment file, a JSON pointer into a document, or both) and
refusing the cycles they form.

A load reads only inside one folder, its root: every `$ref` must resolve (symbolic links and
`..` followed) to a file under it, the caller's root when one is given (a server's `--root`),
else the folder of the top-level tree file. Every file it reads is a regular file, and together
they hold at most `MAX_LOAD_BYTES`. A JSON pointer reads nothing: it looks inside a document
already read. However often `$ref`s name one target, the expanded tree holds at most
`MAX_TREE_CHARS` characters and `MAX_NODE_DEPTH` node levels; a target is validated once and the
normalised node shared wherever it is named again.

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
import re
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tether.errors import TetherError
from tether.files import is_inside
from tether.tree.canonical import Tree, tree_hash
from tether.tree.expressions import check_expression
from tether.tree.locations import (
    MAX_DEPTH,
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
from tether.tree.locations import Path as KeyPath
from tether.tree.model import (
    COMMON_FIELDS,
    FOR_EACH_FIELDS,
    FOR_EACH_MAX,
    KIND_PHRASES,
    KIND_SCHEMAS,
    NODE_FIELDS,
    ON_TIMEOUT,
    REF_FIELDS,
    REPEAT_FIELDS,
    REPEAT_MAX,
    SCOPE_ALIASES,
    STATE_FIELDS,
    STEP_FIELDS,
    STEP_KINDS,
    STEP_KINDS_TEXT,
    TIMEOUT_MAX_SECONDS,
    TOOLS_FIELDS,
    TYPE_ALIASES,
    WRAPPER_FIELDS,
    Field,
    conforms,
)

_WRITE_PREFIXES = ("$VAR.", "$LOCAL.")
_INDEX = re.compile(r"^(0|[1-9][0-9]*)$")

MAX_NODE_DEPTH = MAX_DEPTH
"""How many node levels deep a tree may be once every `$ref` is expanded (one document alone
reaches about half of it: a node level takes two levels of nesting)."""

MAX_TREE_CHARS = 4 * MAX_LOAD_BYTES
"""About how many characters a tree may hold once every `$ref` is expanded, each time a target
is named: a pointer named twice at every level would otherwise double the tree per level."""

_NODE_CHARS = 64  # what one node costs against MAX_TREE_CHARS, besides its texts
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
    data = loader.tree(doc, file.parent)
    return Tree(data, tree_hash(data), str(file))


def load_tree_text(text: str, source_name: str = "<text>", *, base_dir: str | None = None) -> Tree:
    """Load a tree from text; `source_name` names it in errors (a `.json` name parses JSON) and
    `$ref` paths resolve against, and must stay under, `base_dir` (default: the current
    directory)."""
    doc = _parse(text, source_name, as_json=source_name.endswith(".json"))
    loader = _Loader.under(base_dir)
    data = loader.tree(doc, loader.root)
    return Tree(data, tree_hash(data), source_name)


def normalise(raw: Any, source: str = "<data>", *, base_dir: str | None = None) -> dict[str, Any]:
    """Validate and normalise already-parsed tree data (errors name key paths, not lines);
    `$ref` paths resolve as for `load_tree_text`."""
    doc = Document(raw, Locator(None, in_file=False), source)
    loader = _Loader.under(base_dir)
    return loader.tree(doc, loader.root)


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
class _Site:
    """A `$ref` being followed: the document and key path it is at, and what it leads to (a
    document and a key path in it, `()` for a whole file), with the target as a cycle shows it."""

    doc: Document
    path: KeyPath
    target: Document
    at: KeyPath
    shown: str


@dataclass(frozen=True)
class _Expanded:
    """A `$ref` target already normalised: the node, the characters it counted against
    `MAX_TREE_CHARS` and how many node levels it holds below its own."""

    node: dict[str, Any]
    chars: int
    height: int


@dataclass(frozen=True)
class _Context:
    """Where `$ref` paths resolve from, the `$ref`s being followed (to find and name a cycle),
    and how many node levels deep the expanded tree is."""

    base: Path
    refs: tuple[_Site, ...] = ()
    depth: int = 0


class _Loader:
    """One load: the folder it may read (`root`, named in errors as `scope`), the bytes it may
    still read, parsed fragment files and the state merged from every node."""

    def __init__(self, root: Path, scope: str) -> None:
        self.root = root
        self.scope = scope
        self.budget = MAX_LOAD_BYTES
        self.room = MAX_TREE_CHARS
        self.deepest = 0
        self.expanded: dict[tuple[int, KeyPath], _Expanded] = {}
        self.docs: dict[Path, Document] = {}
        self.scopes: dict[str, dict[str, Any]] = {"var": {}, "const": {}}

    @classmethod
    def under(cls, base_dir: str | None) -> _Loader:
        """A load of text or data whose `$ref` paths stay under `base_dir` (default: here)."""
        root = Path(base_dir or ".").resolve()
        return cls(root, f"the base folder {_display(root)}")

    def inside(self, file: Path) -> bool:
        """Whether the resolved `file` lies under the root."""
        return is_inside(file, self.root)

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

    def tree(self, doc: Document, base: Path) -> dict[str, Any]:
        raw, where, context = doc.data, Where(doc), _Context(base)
        if not isinstance(raw, dict):
            where.fail(f"a tree file must be a mapping, got {_describe(raw, content=False)}")
        if "type" in raw or "$ref" in raw:
            if "tree" in raw:
                (where / "tree").fail(
                    "a file is either a wrapper ('tree:') or a node ('type:' at the root), not "
                    "both",
                    at_key=True,
                )
            root, independent = self.node(raw, where, context), []
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
            independent = self.independent(raw, where, context)
        data: dict[str, Any] = {"name": name, "version": version}
        if description is not None:
            data["description"] = description
        data["state"] = self.scopes
        data["root"] = root
        if independent:
            data["independent"] = independent
        return data

    def independent(
        self, raw: dict[str, Any], where: Where, context: _Context
    ) -> list[dict[str, Any]]:
        """The file's `independent` actions: action nodes, their names distinct."""
        items = self.field(raw, "independent", WRAPPER_FIELDS["independent"], where) or []
        at = where / "independent"
        out: list[dict[str, Any]] = []
        first: dict[str, int] = {}
        for index, item in enumerate(items):
            node = self.node(item, at / index, context)
            if node["type"] != "action":
                (at / index).fail(
                    f"{node['name']!r} is a {node['type']}; independent holds actions only"
                )
            if node["name"] in first:
                (at / index).fail(
                    f"duplicate name {node['name']!r} among independent actions "
                    f"(first at independent[{first[node['name']]}])"
                )
            first[node["name"]] = index
            out.append(node)
        return out

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
                exc.message.split(" at ")[0],
                after=f"{line}:{column}: {exc.details['problem']}",
                code=exc.code,
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
        """The node `raw` at `where`, checked and normalised, its `$ref`s expanded."""
        if not isinstance(raw, dict):
            shown = _describe(raw, content=bool(where.path))
            where.fail(f"a node must be a mapping, got {shown}")
        if "$ref" in raw:
            return self.ref(raw, where, context)
        kind = self.node_type(raw, where)
        fields = {**COMMON_FIELDS, **NODE_FIELDS[kind]}
        self.keys(raw, fields, where, f"a {kind} node")
        values = {key: self.field(raw, key, field, where) for key, field in fields.items()}
        self.grow(values, where, context)
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
        out.update(self.modifiers(values, where))
        return out

    def node_type(self, raw: dict[str, Any], where: Where) -> str:
        """A node's `type`, its alias resolved (`fallback` is `selector`); a misspelt one is
        refused with the nearest name."""
        if "type" not in raw:
            where.fail("a node needs a 'type'", hint=f"{KIND_PHRASES['node_type']}, or a '$ref'")
        kind = raw["type"]
        if not conforms(kind, KIND_SCHEMAS["node_type"]):
            close = difflib.get_close_matches(str(kind), KIND_SCHEMAS["node_type"]["enum"], n=1)
            hint = f"did you mean {close[0]!r}?" if close else KIND_PHRASES["node_type"]
            shown = repr(kind) if isinstance(kind, str) else _describe(kind)
            (where / "type").fail(f"unknown node type {shown}", hint=hint)
        return str(TYPE_ALIASES.get(kind, kind))

    def modifiers(self, values: dict[str, Any], where: Where) -> dict[str, Any]:
        """The modifiers a node's checked `values` set (retries, optional, the loops, when,
        tools, ...), in their normalised form; those left at their defaults are left out."""
        out: dict[str, Any] = {}
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
        if values["tools"] is not None:
            out["tools"] = self.tools(values["tools"], where / "tools")
        if values["writes"] is not None:
            out["writes"] = list(values["writes"])
        return out

    def tools(self, raw: Any, where: Where) -> dict[str, list[str]]:
        """A node's `tools` policy, each entry checked where it stands."""
        if not isinstance(raw, dict) or not raw:
            got = "an empty mapping" if raw == {} else _describe(raw)
            where.fail(f"tools must be {KIND_PHRASES['tool_policy']}, got {got}")
        self.keys(raw, TOOLS_FIELDS, where, "tools")
        out: dict[str, list[str]] = {}
        for key in ("allow", "deny"):
            entries = raw.get(key)
            if key not in raw:
                continue
            if not isinstance(entries, list):
                (where / key).fail(
                    f"{key} must be {KIND_PHRASES['tool_entries']}, got {_describe(entries)}"
                )
            item = KIND_SCHEMAS["tool_entries"]["items"]
            for i, entry in enumerate(entries):
                if not conforms(entry, item):
                    (where / key / i).fail(
                        f"{_describe(entry)} is not a tool entry",
                        hint="a name such as Read, mcp__server__tool or *, optionally with an "
                        "argument in parentheses: Bash(pytest*)",
                    )
            out[key] = list(entries)
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
            loop = {
                "in": values["in"],
                "as": values["as"] or "item",
                "max": values["max"] or FOR_EACH_MAX,
            }
            return loop | self.fan(values, loop["max"], at)
        self.expression(values["until"], at / "until")
        return {"until": values["until"], "max": values["max"] or REPEAT_MAX}

    def fan(self, values: dict[str, Any], most: int, where: Where) -> dict[str, Any]:
        """A `for_each`'s `parallel` and `policy`, normalised: `{parallel: true, policy}` for a
        loop fanned out (its policy no more than its `max` items), nothing for one run in
        order (where a `policy` is refused: it has nothing to decide)."""
        if not values["parallel"]:
            if values["policy"] is not None:
                (where / "policy").fail(
                    "policy applies only to a for_each with parallel: true (its items run in "
                    "order, and the first failing item fails the node)"
                )
            return {}
        policy = values["policy"] or "all"
        if isinstance(policy, int) and policy > most:
            (where / "policy").fail(f"policy {policy} is more than the loop's max ({most} items)")
        return {"parallel": True, "policy": policy}

    def children(self, raw: list[Any], where: Where, context: _Context) -> list[dict[str, Any]]:
        children: list[dict[str, Any]] = []
        first: dict[str, int] = {}
        inner = replace(context, depth=context.depth + 1)
        for index, item in enumerate(raw):
            child = self.node(item, where / "children" / index, inner)
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
        elif STEP_FIELDS[kind].kind == "step_text":
            text = trim_text(text)
        out: dict[str, Any] = {kind: text}
        writes = self.field(raw, "writes", STEP_FIELDS["writes"], where)
        if writes is not None:
            if kind != "instruct":
                (where / "writes").fail("writes applies only to instruct steps", at_key=True)
            out["writes"] = [
                p.split(".", 1)[1] if p.startswith(_WRITE_PREFIXES) else p for p in writes
            ]
        out.update(self.timeout(raw, kind, where))
        return out

    def timeout(self, raw: dict[str, Any], kind: str, where: Where) -> dict[str, Any]:
        """A human step's `timeout` (as seconds) and `on_timeout` (`reject` when not given), or
        nothing when it has none; refused on any other step, and `on_timeout` without one."""
        text = self.field(raw, "timeout", STEP_FIELDS["timeout"], where)
        how = self.field(raw, "on_timeout", STEP_FIELDS["on_timeout"], where)
        for key, value in (("timeout", text), ("on_timeout", how)):
            if value is not None and kind != "human":
                (where / key).fail(f"{key} applies only to human steps", at_key=True)
        if text is None:
            if how is not None:
                (where / "on_timeout").fail("on_timeout needs a timeout", at_key=True)
            return {}
        seconds = duration_seconds(text)
        if not 0 < seconds <= TIMEOUT_MAX_SECONDS:
            (where / "timeout").fail(
                f"timeout {text!r} must be longer than zero and at most 366 days "
                f"({TIMEOUT_MAX_SECONDS} seconds); it is {seconds} seconds"
            )
        return {"timeout": seconds, "on_timeout": how or ON_TIMEOUT[0]}

    def grow(self, values: dict[str, Any], where: Where, context: _Context) -> None:
        """Count one node of the expanded tree against `MAX_NODE_DEPTH` and `MAX_TREE_CHARS`,
        before its children are expanded: `$ref`s may name one node many times, and no more
        than these limits may come of it."""
        self.spend(
            _NODE_CHARS
            + sum(_chars(v) for key, v in values.items() if key not in ("children", "state")),
            context.depth,
            where,
        )

    def spend(self, chars: int, depth: int, where: Where) -> None:
        """Count `chars` more characters of the expanded tree, reaching `depth` node levels."""
        if depth >= MAX_NODE_DEPTH:
            where.fail(
                f"the tree is more than {MAX_NODE_DEPTH} nodes deep ($ref targets included)",
                node_depth_limit=MAX_NODE_DEPTH,
            )
        self.deepest = max(self.deepest, depth)
        self.room -= chars
        if self.room < 0:
            where.fail(
                f"the tree expands to more than {MAX_TREE_CHARS} characters ($ref targets "
                "counted each time they are named)",
                char_limit=MAX_TREE_CHARS,
            )

    def ref(self, raw: dict[str, Any], where: Where, context: _Context) -> dict[str, Any]:
        """The node a `$ref` names: a fragment file (`parts/x.yaml`), a JSON pointer into this
        document (`#/tree/children/0`), or a pointer into a fragment (`parts/x.yaml#/children/1`).
        Resolving a pointer reads nothing; it only looks inside a document already read."""
        self.keys(raw, REF_FIELDS, where, "a $ref node")
        target = self.field(raw, "$ref", REF_FIELDS["$ref"], where)
        at = where / "$ref"
        name, hash_, pointer = target.partition("#")
        file: Path | None
        if name:
            file = (context.base / name).resolve()
            if not self.inside(file):
                at.fail(
                    f"$ref {target!r} is outside {self.scope}",
                    hint="a $ref may name only files under it",
                    code="forbidden",
                )
            shown = os.path.relpath(file, context.base)
        else:
            file, shown = None, ""
        tokens = _pointer_tokens(pointer, at, target) if hash_ else []
        if hash_:
            shown += "#" + pointer
        if file is None:
            doc, base = where.doc, context.base
        else:
            doc, base = self.existing(file, at), file.parent
        path = _follow(doc, tokens, at, target)
        site = _Site(where.doc, where.path, doc, path, shown)
        self.cycle(site, at, context)
        done = self.expanded.get((id(doc), path))
        if done is not None:
            # Expanded once already, so valid and free of cycles wherever it is named again: it
            # counts against the limits again, and the one normalised node is shared.
            self.spend(done.chars, context.depth + done.height, at)
            return done.node
        via = f"{where.doc.display} at {format_path(where.path)}"
        value = doc.data
        for part in path:
            value = value[part]
        room, deepest, self.deepest = self.room, self.deepest, context.depth
        node = self.node(
            value, Where(doc, path, via), replace(context, base=base, refs=(*context.refs, site))
        )
        height = self.deepest - context.depth
        self.expanded[(id(doc), path)] = _Expanded(node, room - self.room, height)
        self.deepest = max(deepest, self.deepest)
        return node

    def existing(self, file: Path, at: Where) -> Document:
        """The parsed fragment file `file`, which must exist."""
        if file not in self.docs and not file.exists():
            at.fail(f"$ref file {_display(file)} does not exist")
        return self.document(file, at)

    def cycle(self, site: _Site, at: Where, context: _Context) -> None:
        """Refuse the `$ref` at `site` if its target holds a `$ref` being followed (this one
        included): expanding it would reach that `$ref` again, without end. The error names
        the cycle, each `$ref` target as the tree spells it."""
        sites = (*context.refs, site)
        for i, followed in enumerate(sites):
            inside = followed.path[: len(site.at)] == site.at
            if followed.doc is site.target and inside:
                names = [site.shown, *(s.shown for s in sites[i:])]
                at.fail(f"$ref cycle: {' -> '.join(names)}")


def duration_seconds(text: str) -> int:
    """The seconds of a duration that matches `DURATION_PATTERN` (`1h30m` is 5400)."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"([0-9]+)([dhms])", text))


def trim_text(text: str) -> str:
    """A step text as the agent sees it: without leading and trailing blank lines, the
    indentation its lines share, or surrounding white space (abtree trims step texts too)."""
    return textwrap.dedent(text).strip()


def _chars(value: Any) -> int:
    """About how many characters `value` adds to the expanded tree."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_chars(item) + 1 for item in value)
    if isinstance(value, dict):
        return sum(len(str(key)) + _chars(item) for key, item in value.items())
    return 1


def _pointer_tokens(pointer: str, at: Where, target: str) -> list[str]:
    """The reference tokens of the JSON pointer after a `$ref`'s `#` (RFC 6901, as a URI
    fragment: %-escapes are decoded first)."""
    from urllib.parse import unquote

    text = unquote(pointer)
    if not text:
        return []
    if not text.startswith("/"):
        at.fail(
            f"$ref {target!r}: a JSON pointer after '#' begins with '/'",
            hint="such as '#/tree/children/0'",
        )
    tokens = text[1:].split("/")
    for token in tokens:
        if "~" in token.replace("~0", "").replace("~1", ""):
            at.fail(f"$ref {target!r}: '~' in a JSON pointer is written '~0' ('/' is '~1')")
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _follow(doc: Document, tokens: list[str], at: Where, target: str) -> KeyPath:
    """The key path in `doc` that a JSON pointer's `tokens` name; refused when nothing is there."""
    value = doc.data
    path: list[str | int] = []
    for token in tokens:
        if isinstance(value, dict) and token in value:
            value = value[token]
            path.append(token)
        elif isinstance(value, list) and _INDEX.match(token) and int(token) < len(value):
            value = value[int(token)]
            path.append(int(token))
        else:
            place = format_path(tuple(path))
            if isinstance(value, dict):
                problem = f"{place} has no key {token!r}"
            elif isinstance(value, list):
                problem = f"{place} has no item {token!r} (it holds {len(value)})"
            else:
                problem = f"{place} is {_describe(value, content=False)}"
            at.fail(f"$ref {target!r} names nothing: {problem}")
    return tuple(path)

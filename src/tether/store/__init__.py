"""Execution stores addressed by URI, and the choice of store for a URI.

Owns the scheme table: a bare path or `file:` URI goes to the file store (the embedded default),
`memory://` to the process-wide memory store, `postgresql://` (or `postgres://`) to the PostgreSQL
store, which keeps one connection pool per database. Anything else is refused with `unknown_scheme`.
Store modules are imported only when their scheme is used. It also owns `path_of`, the path a
`file:` URI or a bare path names (for executions and tree files alike), and `encode`, the one
JSON encoding every store writes: standard JSON only, so that a NaN or an infinity that slipped
past the verbs is refused rather than stored in a form that other readers (the viewer's page,
PostgreSQL) cannot parse.

This module, `tether.store.base` (the contract every store keeps) and `tether.store.tally` (the
figures every store's `tally` counts) are the stores' public face: code outside `tether.store`
imports nothing else of it and reads no execution file itself (`tests/store/test_boundaries.py`
holds it to that).
"""

from __future__ import annotations

import json
import os
import re

from tether.errors import TetherError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from tether.store.base import Store

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_stores: dict[str, Store] = {}


def encode(value: Any, *, indent: int | None = None) -> str:
    """`value` as standard JSON text (compact unless `indent`); `invalid_value` for a NaN or an
    infinity, which JSON cannot hold."""
    try:
        if indent is None:
            return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except ValueError as exc:
        raise TetherError("invalid_value", f"not storable as JSON: {exc}") from None


def scheme_of(uri: str) -> str:
    """`file` for a bare path, else the URI's scheme in lower case."""
    match = _SCHEME.match(uri)
    if match is None or len(match.group(1)) == 1:  # a bare path, or a Windows drive letter
        return "file"
    return match.group(1).lower()


def path_of(uri: str) -> str:
    """The filesystem path that a `file:` URI or a bare path names, made absolute."""
    path = uri
    if uri.startswith("file:"):
        path = uri[len("file://") :] if uri.startswith("file://") else uri[len("file:") :]
        if path.startswith("localhost/"):
            path = path[len("localhost") :]
        if "%" in path:
            from urllib.parse import unquote

            path = unquote(path)
    if not path:
        raise TetherError("invalid_value", f"{uri!r} names no file")
    return os.path.abspath(os.path.expanduser(path))


def store_for(uri: str) -> Store:
    """The store that holds `uri` (one instance per scheme per process)."""
    scheme = scheme_of(uri)
    store = _stores.get(scheme)
    if store is not None:
        return store
    if scheme == "file":
        from tether.store.file import FileStore

        store = FileStore()
    elif scheme == "memory":
        from tether.store.memory import MemoryStore

        store = MemoryStore()
    elif scheme in ("postgresql", "postgres"):
        try:
            from tether.store.postgres import PostgresStore
        except ModuleNotFoundError as exc:
            raise TetherError(
                "store_unavailable",
                f"{scheme}:// executions need the PostgreSQL driver ({exc.name} is not "
                "installed): in a checkout of Tether, pip install '.[postgres]' (after a release: "
                "pip install 'tether-bt[postgres]')",
                uri=uri,
            ) from None
        store = PostgresStore()
    else:
        raise TetherError(
            "unknown_scheme",
            f"unknown URI scheme {scheme!r} in {uri!r}: use a path, file://, memory:// or "
            "postgresql://",
            uri=uri,
        )
    _stores[scheme] = store
    return store

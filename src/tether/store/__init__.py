"""Execution stores addressed by URI, and the choice of store for a URI.

Owns the scheme table: a bare path or `file:` URI goes to the file store (the embedded default),
`memory://` to the process-wide memory store, `postgresql://` (or `postgres://`) to the PostgreSQL
store, which keeps one connection pool per database. Anything else is refused with `unknown_scheme`.
Store modules are imported only when their scheme is used. For code outside the stores it also
gives what it shares with them (`tether.store.shared`): `scheme_of`, `path_of` (the path a
`file:` URI or a bare path names, for executions and tree files alike) and `encode`, the one
JSON encoding every store writes.

This module, `tether.store.base` (the contract every store keeps) and `tether.store.tally` (the
figures every store's `tally` counts) are the stores' public face: code outside `tether.store`
imports nothing else of it and reads no execution file itself (`tests/store/test_boundaries.py`
holds it to that).
"""

from __future__ import annotations

from tether.errors import TetherError
from tether.store.shared import encode, path_of, scheme_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tether.store.base import Store

__all__ = ["encode", "path_of", "scheme_of", "store_for"]

_stores: dict[str, Store] = {}


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
            from tether.installation import missing_extra

            raise missing_extra(
                "postgres", exc.name, f"{scheme}:// executions (the PostgreSQL driver)", uri=uri
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

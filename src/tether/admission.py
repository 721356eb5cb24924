"""Which stores and files a runtime may reach: the admission every URI passes before a store
is opened.

Owns:
- where a name that is not a URI lives (`anchor`: the default store, else a file relative to
  the root);
- the root's confinement of files (`..` and symbolic links included), for executions, trees and
  listed folders;
- the databases a server was given (`stores`): any other is refused before anything connects,
  and so is a URI that carries a password.

It does not open connections or read executions (the stores do) and does not run verbs
(`tether.verbs.Runtime`, which holds one `Admission`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from tether.errors import TetherError
from tether.files import is_inside
from tether.store import path_of, scheme_of, store_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tether.store.base import Store

_OWN_STORES = ("file", "memory")  # confined by the root, and the process's own


class Admission:
    """With `root`, files are confined to that folder. With `stores` (what a server passes), a
    URI naming a database is refused (`forbidden`) before any connection unless it names one of
    those databases or the default store's, with the same host, port, database, user and
    parameters, and carries no password: a client reaches only what the server was given."""

    def __init__(
        self, root: str | None, default_store: str | None, stores: Iterable[str] | None
    ) -> None:
        self.root = os.path.realpath(root) if root is not None else None
        self.default_store = default_store or os.environ.get("TETHER_STORE") or None
        self._stores = None if stores is None else _databases(stores, self.default_store)

    def store(self, uri: str) -> tuple[Store, str]:
        """The store for `uri` and the URI's canonical spelling, confined to `root` if set."""
        anchored = self.anchor(uri)
        store = store_for(anchored)
        self._admit(store, anchored, uri)
        canonical = store.canonical(anchored)
        if self.root is not None and canonical.startswith("file://"):
            self._confine(canonical[len("file://") :], uri)
        return store, canonical

    def _admit(self, store: Store, uri: str, given: str) -> None:
        """Refuse (`forbidden`) a database URI outside `stores`, before anything connects. The
        error says the same whatever lies at the address, so it tells a client nothing of it."""
        if self._stores is None or store.scheme in _OWN_STORES:
            return
        if not _carries_password(uri) and store.place(uri)[0] in self._stores:
            return
        raise TetherError(
            "forbidden",
            f"{given!r} names a store this server was not given: it reaches only the stores it "
            "was started with (--store, --allow-store), with their own credentials; name the "
            "execution without a scheme to use the default store",
            uri=given,
        )

    def anchor(self, uri: str, *, tree: bool = False) -> str:
        """Where a name that is not a URI lives: in the default store (`default_store`, else the
        `TETHER_STORE` environment variable) — `STORE#name` for a database, `memory://name`, or
        `FOLDER/name` for a folder (a path or `file://` URI) — or else as a file, relative to the
        root when there is one. Trees are always files, relative to the root."""
        if "\x00" in uri:
            raise TetherError(
                "invalid_value",
                f"{uri!r} holds a NUL character, which no file or store name can hold",
                uri=uri,
            )
        if "://" in uri or uri.startswith("file:"):
            return uri
        store = None if tree else self.default_store
        if store:
            return store_for(store).locate(store, uri)
        if self.root is None or os.path.isabs(uri):
            return uri
        return os.path.join(self.root, uri)

    def tree_path(self, tree_uri: str) -> str:
        """The file a tree URI (a path or `file:` URI) names, relative to the root and confined
        to it when there is one."""
        path = path_of(self.anchor(tree_uri, tree=True))
        if self.root is not None:
            self._confine(path, tree_uri)
        return path

    def place(self, where: str | None) -> str:
        """The place executions are listed from: `where` (a folder, `memory://`, a database),
        else the default store, else the root, else the current folder; admitted and confined
        as an execution's URI is."""
        place = self.anchor(where, tree=True) if where else None
        place = place or self.default_store or self.root or "."
        self._admit(store_for(place), place, where or place)
        if self.root is not None and scheme_of(place) == "file":
            self._confine(path_of(place), where or place)
        return place

    def _confine(self, path: str, given: str) -> None:
        """Refuse a file outside the root, however it is reached (`..`, symbolic links); the
        error names the file as it was `given`."""
        assert self.root is not None
        if not is_inside(path, self.root):
            raise TetherError(
                "forbidden",
                f"{given!r} is outside the allowed root {self.root} (the server's --root)",
                path=given,
            )


def _databases(stores: Iterable[str], default: str | None) -> frozenset[str]:
    """The places (databases) of `stores` and of the default store, if it is one; a store to
    allow that is not a database is `usage`."""
    stores = tuple(stores)
    for store in stores:
        if scheme_of(store) in _OWN_STORES:
            raise TetherError(
                "usage",
                f"a store to allow is a database (postgresql://user@host/db), not {store!r}: "
                "files are confined by the root and memory:// is the server's own",
            )
    given = [*stores, *([default] if default else [])]
    return frozenset(store_for(s).place(s)[0] for s in given if scheme_of(s) not in _OWN_STORES)


def _carries_password(uri: str) -> bool:
    """Whether a URI carries a password, in its user part or as a `password` parameter."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(uri)
    return parts.password is not None or "password" in parse_qs(parts.query)

"""The loaded tree as a value: the `Tree` record, its canonical JSON text and its hash.

Owns: `Tree` (normalised data, hash, source), the canonical encoding (sorted keys, no spaces,
UTF-8) and `tree_hash`, so that every spelling and key order of one tree hashes the same.

Does not own: producing the normalised data (`load.py`). Imports neither YAML nor pydantic, so
the runtime can re-hash an embedded tree cheaply.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


def canonical_json(data: Any) -> str:
    """The one text encoding of `data` that hashing uses."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tree_hash(data: Any) -> str:
    """`sha256:<hex>` of the canonical JSON of normalised tree data."""
    return "sha256:" + hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Tree:
    """A loaded, validated, normalised tree. `data` is plain JSON data (treat it as read-only);
    `hash` is `tree_hash(data)`; `source` is the absolute path of the file it came from (or the
    name given to `load_tree_text`)."""

    data: dict[str, Any]
    hash: str
    source: str

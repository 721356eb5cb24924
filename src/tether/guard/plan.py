"""The resolved plan of a configuration file, cached so that a fresh process stays fast.

Owns: loading a configuration file's plan (see `config.resolve`) through a JSON cache keyed by the
file's absolute path and invalidated when the file, a custom profile it read, or the guard's own
rule and profile sources change. A fresh cache is read without importing YAML or pydantic, which
keeps `tether guard hook` quick. It does not validate anything itself.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from tether.files import write_atomic

CACHE_VERSION = 1
_SOURCES = ("config.py", "rules.py", "profiles.py", "conditions.py", "prompts/dev.md")


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _sources() -> list[str]:
    here = os.path.dirname(__file__)
    return [os.path.join(here, name) for name in _SOURCES]


def _cache_name(absolute: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", absolute)
    if len(name) <= 200:
        return f"plan-{name}.json"
    import hashlib

    return f"plan-h-{hashlib.sha256(absolute.encode()).hexdigest()[:32]}.json"


def load_plan(path: str | os.PathLike[str], cache_dir: str | None = None) -> dict[str, Any]:
    """The plan of the configuration file at `path`, from `cache_dir` when still fresh."""
    if cache_dir is None:
        from tether.guard.config import plan_from_file

        return plan_from_file(path)[0]
    absolute = os.path.abspath(path)
    cache_file = os.path.join(cache_dir, _cache_name(absolute))
    try:
        with open(cache_file, encoding="utf-8") as handle:
            cached = json.loads(handle.read())
        if (
            cached["version"] == CACHE_VERSION
            and cached["path"] == str(path)
            and all(_stamp(file) == stamp for file, stamp in cached["files"].items())
        ):
            return cached["plan"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from tether.guard.config import plan_from_file

    plan, read = plan_from_file(path)
    files = {file: _stamp(file) for file in [absolute, *read, *_sources()]}
    try:  # a cache that cannot be written only costs the next process a parse
        os.makedirs(cache_dir, exist_ok=True)
        write_atomic(
            cache_file,
            json.dumps({"version": CACHE_VERSION, "path": str(path), "files": files, "plan": plan}),
        )
    except OSError:
        pass
    return plan

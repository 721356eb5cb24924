"""The resolved plan of a configuration file, cached so that a fresh process stays fast.

Owns: loading a configuration file's plan (see `config.resolve`) through a JSON cache keyed by the
file's absolute path, and the plan's `files`: the configuration files it was made from (the file
and the custom profiles it read), which a bound session may not write (`binding`). A cache is
used only while it was made from exactly the text those files hold now (it keeps their text,
never just a time stamp) and from the guard's own rule and profile sources as they stand (by
time stamp): a cache never outranks the file it was made from. A cache is also sealed: it
carries a MAC of its body (the files' text, the sources' stamps and the plan) under a key kept
beside the caches (`seal.key`, made once, readable by its owner alone), so a plan written by
anyone who has not read that key (`rules: []` beside the right texts) is not a cache. `last_plan`
gives the plan a sealed cache holds whatever the file says now: the last good plan, for when the
file cannot be read or is gone.
A fresh cache is read without importing YAML or pydantic, which keeps `tether guard hook` quick.
It also names where a project's configuration file is (`config_path`: `--config`, the file
`$TETHER_GUARD_CONFIG` names, or `DEFAULT_CONFIG` in the project). It does not validate anything
itself.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from tether.errors import TetherError
from tether.files import write_atomic

# Where a project keeps its configuration, and the variable naming another file.
CONFIG_ENV = "TETHER_GUARD_CONFIG"
DEFAULT_CONFIG = os.path.join(".tether", "guard.yaml")
CACHE_VERSION = 3
KEY_NAME = "seal.key"
_SOURCES = ("config.py", "rule.py", "profiles.py", "conditions.py", "prompts/dev.md")


def config_path(given: str | None, cwd: str | None = None) -> str:
    """`given` (`--config`), else `$TETHER_GUARD_CONFIG`, else `DEFAULT_CONFIG` in the project
    (`$CLAUDE_PROJECT_DIR`, else `cwd`, else the current folder), there or not."""
    if given:
        return given
    if os.environ.get(CONFIG_ENV):
        return os.environ[CONFIG_ENV]
    base = os.environ.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd()
    return os.path.join(base, DEFAULT_CONFIG)


def find_config(given: str | None, cwd: str | None = None) -> str:
    """The file `config_path` names; it must be there unless given or named by the environment."""
    path = config_path(given, cwd)
    if not given and not os.environ.get(CONFIG_ENV) and not os.path.exists(path):
        raise TetherError(
            "not_found",
            f"no guard configuration: pass --config, set {CONFIG_ENV}, or create {DEFAULT_CONFIG}",
        )
    return path


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read()
    except OSError:
        return None


def _sources() -> list[str]:
    here = os.path.dirname(__file__)
    return [os.path.join(here, name) for name in _SOURCES]


def _cache_name(absolute: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", absolute)
    if len(name) <= 200:
        return f"plan-{name}.json"
    import hashlib

    return f"plan-h-{hashlib.sha256(absolute.encode()).hexdigest()[:32]}.json"


def _key(cache_dir: str) -> bytes:
    """The key the caches of `cache_dir` are sealed with, made on first use (owner-only)."""
    path = os.path.join(cache_dir, KEY_NAME)
    try:
        with open(path, "rb") as handle:
            key = handle.read()
        if len(key) >= 32:
            return key
    except FileNotFoundError:
        pass
    os.makedirs(cache_dir, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another hook made it first, or a short key: a new one replaces it
        write_atomic(path, os.urandom(32))
        os.chmod(path, 0o600)
        return _key(cache_dir)
    with os.fdopen(fd, "wb") as handle:
        handle.write(os.urandom(32))
    return _key(cache_dir)


def _seal(key: bytes, body: dict[str, Any]) -> str:
    """The seal of a cache's body: keyed BLAKE2b (a MAC), from CPython's own module where it
    is there, which spares a hook process the OpenSSL load `hashlib` makes (3 ms of ~45)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # another Python
        from hashlib import blake2b
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return blake2b(text.encode("utf-8", "surrogatepass"), key=key[:64], digest_size=32).hexdigest()


def _cached(path: str | os.PathLike[str], cache_dir: str) -> dict[str, Any] | None:
    """The cache made for the file at `path`, whatever its freshness, or None (also when its
    seal does not match its body)."""
    absolute = os.path.abspath(path)
    try:
        with open(os.path.join(cache_dir, _cache_name(absolute)), encoding="utf-8") as handle:
            cached = json.loads(handle.read())
        body = {k: cached[k] for k in ("version", "path", "texts", "sources", "plan")}
        if cached["version"] == CACHE_VERSION and cached["path"] == absolute:
            with open(os.path.join(cache_dir, KEY_NAME), "rb") as handle:
                key = handle.read()
            # A plain comparison: whoever could time it could read the key as well.
            if str(cached["seal"]) == _seal(key, body):
                return body
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _fresh(cached: dict[str, Any]) -> bool:
    texts, stamps = cached["texts"], cached["sources"]
    return (
        cached["path"] in texts
        and all(_text(file) == text for file, text in texts.items())
        and sorted(stamps) == sorted(_sources())
        and all(stamp is not None and _stamp(file) == stamp for file, stamp in stamps.items())
    )


def load_plan(path: str | os.PathLike[str], cache_dir: str | None = None) -> dict[str, Any]:
    """The plan of the configuration file at `path`, from `cache_dir` when still fresh."""
    from_cache = _cached(path, cache_dir) if cache_dir is not None else None
    try:
        if from_cache is not None and _fresh(from_cache):
            return dict(from_cache["plan"])
    except (KeyError, TypeError, AttributeError):
        pass
    from tether.guard.rules.config import plan_from_file

    absolute = os.path.abspath(path)
    plan, read = plan_from_file(path)
    files = [absolute, *read]
    plan = {**plan, "files": files}
    if cache_dir is None:
        return plan
    texts = {file: _text(file) for file in files}
    sources = {file: _stamp(file) for file in _sources()}
    body = {
        "version": CACHE_VERSION,
        "path": absolute,
        "texts": texts,
        "sources": sources,
        "plan": plan,
    }
    try:  # a cache that cannot be written only costs the next process a parse
        sealed = {**body, "seal": _seal(_key(cache_dir), body)}
        write_atomic(os.path.join(cache_dir, _cache_name(absolute)), json.dumps(sealed))
    except OSError:
        pass
    return plan


def last_plan(path: str | os.PathLike[str], cache_dir: str) -> dict[str, Any] | None:
    """The plan last made from the file at `path` (the last good one), stale or not, the file
    there or not."""
    cached = _cached(path, cache_dir)
    plan = cached.get("plan") if cached is not None else None
    return plan if isinstance(plan, dict) else None

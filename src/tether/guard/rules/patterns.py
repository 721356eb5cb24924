"""Regular expressions for rules and tracking, matched in linear time.

Owns: compiling every pattern the guard searches, built-in or user-written (`param_matches`,
`text_matches`, legacy `pattern`, `reset_when.matches`), with RE2 (the `google-re2` package),
case-insensitive. RE2 never backtracks: a search costs time linear in the text, so no pattern can
hang a hook. `pattern_error` says why RE2 refuses a pattern (backreferences and lookaround do not
exist there); the configuration reports it with its file, line and key when it loads. `Pattern`
compiles on its first search, so a fresh hook process compiles only what its event needs, and a
pattern sees at most the first `MAX_TEXT` characters of a value. `re2` is imported on first use:
never on the CLI's start-up path. It does not decide where patterns come from.
"""

from __future__ import annotations

from typing import Any

MAX_TEXT = 64 * 1024
"""The most characters of a value (a parameter, the model's text) that a pattern searches."""

_HINT = "patterns run on RE2, which has no backreferences or lookaround"


def _compile(source: str) -> Any:
    import re2

    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    return re2.compile(source.encode("utf-8", "surrogatepass"), options)


def pattern_error(source: str) -> str | None:
    """Why `source` is not a pattern the guard can run, or None when it is."""
    import re2

    try:
        _compile(source)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"invalid regular expression {source!r}: {reason} ({_HINT})"
    return None


class Pattern:
    """A case-insensitive RE2 pattern, compiled on first `search`."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: Any = None

    def search(self, text: str) -> bool:
        """Whether the pattern occurs in the first `MAX_TEXT` characters of `text`."""
        if self._compiled is None:
            self._compiled = _compile(self.source)
        data = text[:MAX_TEXT].encode("utf-8", "replace")
        return self._compiled.search(data) is not None

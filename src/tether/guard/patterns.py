"""Regular expressions compiled on first use.

Owns: `Pattern`, a case-insensitive regular expression whose compilation waits until it is first
searched, so that a fresh hook process pays only for the patterns its event needs. Checking that a
pattern is valid is the configuration's job, done once when a configuration is loaded.
"""

from __future__ import annotations

import re


class Pattern:
    """A case-insensitive regular expression, compiled on first `search`."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str) -> bool:
        if self._compiled is None:
            self._compiled = re.compile(self.source, re.IGNORECASE)
        return self._compiled.search(text) is not None

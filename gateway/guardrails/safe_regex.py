"""Tenant-written patterns run on RE2: matching is linear in the text whatever the pattern, so `(a+)+$` cannot
backtrack catastrophically. Constructs RE2 cannot run in linear time (backreferences, lookaround) are refused
when the rule is saved, never at request time."""
from __future__ import annotations

from collections.abc import Iterator

import re2

MAX_PATTERN_CHARS = 1000
MAX_PROGRAM_BYTES = 1 << 20  # RE2's memory for one compiled pattern: a huge counted repeat is refused

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is the tenant's mistake, reported in the 400, not on stderr
_OPTIONS.max_mem = MAX_PROGRAM_BYTES


class UnsafePattern(ValueError):
    """Not compiled: too long, invalid, or a construct RE2 refuses."""


class SafePattern:
    """A compiled RE2 pattern; `spans` yields (start, end) of non-overlapping matches, in str indices."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str) -> None:
        if not source:
            raise UnsafePattern("the pattern is empty")
        if len(source) > MAX_PATTERN_CHARS:
            raise UnsafePattern(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
        try:
            self._compiled = re2.compile(source, _OPTIONS)
        except re2.error as e:
            raise UnsafePattern(f"RE2 cannot compile it ({_reason(e)}); backreferences and lookaround "
                                "are not supported, as they cannot run in linear time") from None
        self.source = source

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        for m in self._compiled.finditer(text):
            if m.end() > m.start():  # an empty match masks nothing and would fire on every text
                yield m.start(), m.end()


def _reason(e: Exception) -> str:
    arg = e.args[0] if e.args else str(e)
    return arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)

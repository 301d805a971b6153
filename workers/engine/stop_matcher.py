"""Stop strings found in text that arrives piece by piece, in time linear in the text plus the stop strings.

Each stop string keeps a Knuth-Morris-Pratt state: how many of its first characters end the text so far.
A piece advances every state by its characters (amortized O(1) each), so a step costs the length of its new
text, never the length of a stop string or of the text before it; the longest state is the tail a stream must
hold back (it could still grow into a stop string). Building the tables costs the stop strings' length, once.
"""
from __future__ import annotations

from dataclasses import dataclass


def _failure(pattern: str) -> list[int]:
    """fail[i]: the length of the longest proper prefix of pattern[:i + 1] that is also its suffix."""
    fail = [0] * len(pattern)
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    return fail


@dataclass(slots=True)
class _Automaton:
    pattern: str
    fail: list[int]
    matched: int = 0  # characters of `pattern` that end the text fed so far (< len(pattern))

    def feed(self, piece: str) -> int | None:
        """Advance over `piece`; the offset in it just past this pattern's first full match, or None."""
        pattern, fail, k, end = self.pattern, self.fail, self.matched, None
        for i, ch in enumerate(piece):
            while k and pattern[k] != ch:
                k = fail[k - 1]
            if pattern[k] == ch:
                k += 1
            if k == len(pattern):
                if end is None:
                    end = i + 1
                k = fail[k - 1]  # keep going: the partial tail after a match still counts
        self.matched = k
        return end


class StopMatcher:
    def __init__(self, stops: list[str]) -> None:
        self._automata = [_Automaton(s, _failure(s)) for s in stops if s]
        self.fed = 0  # characters fed so far

    def feed(self, piece: str) -> tuple[int, int] | None:
        """Advance over `piece`; (start, length) of the earliest-starting stop string that ends inside it (at a
        tie the shortest, which completed first), as an offset in all the text fed; None when none does."""
        hits = []
        for a in self._automata:
            end = a.feed(piece)
            if end is not None:
                hits.append((self.fed + end - len(a.pattern), len(a.pattern)))
        self.fed += len(piece)
        return min(hits) if hits else None

    def partial_len(self) -> int:
        """Length of the longest tail of the text fed that is a proper prefix of some stop string."""
        return max((a.matched for a in self._automata), default=0)

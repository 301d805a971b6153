"""Prompt lookup (n-gram) drafts: no model, just the sequence's own tokens.

Input-grounded outputs (rewrites, extractions, summaries, code edits) copy long runs of their prompt. When
the last n tokens of a sequence occurred earlier in it, the tokens that followed that occurrence are a good
guess at what follows now. Plain data in, plain data out: this runs in the scheduler on token ids."""
from __future__ import annotations

from array import array

_ITEM = array("i").itemsize


class NgramProposer:
    def __init__(self, lookup_min: int, lookup_max: int) -> None:
        if not 1 <= lookup_min <= lookup_max:
            raise ValueError(f"need 1 <= lookup_min <= lookup_max, got {lookup_min}, {lookup_max}")
        self.lookup_min = lookup_min
        self.lookup_max = lookup_max

    def propose(self, token_ids: list[int], k: int) -> list[int]:
        """Up to k tokens that followed the latest earlier occurrence of the longest suffix (lookup_max down
        to lookup_min tokens) of token_ids; [] when no suffix occurred before."""
        num = len(token_ids)
        if k < 1 or num <= self.lookup_min:
            return []
        # Searching the bytes of an int32 array runs in C: the whole context is scanned every step.
        haystack = array("i", token_ids).tobytes()
        for n in range(min(self.lookup_max, num - 1), self.lookup_min - 1, -1):
            start = _rfind_aligned(haystack, haystack[(num - n) * _ITEM:], end=(num - 1) * _ITEM)
            if start is not None:
                follow = start + n
                return token_ids[follow:follow + k]
        return []


def _rfind_aligned(haystack: bytes, needle: bytes, end: int) -> int | None:
    """Token index of the last occurrence of needle that starts on a token boundary and ends before byte `end`
    (so that at least one token follows it); None if there is none."""
    limit = end
    while True:
        at = haystack.rfind(needle, 0, limit)
        if at < 0:
            return None
        if at % _ITEM == 0:
            return at // _ITEM
        limit = at + len(needle) - 1  # a match straddling token boundaries: look further left

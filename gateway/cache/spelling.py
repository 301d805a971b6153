"""Typos mended before a question is embedded for the vector search: "calroies" and "exeptions" split into
word pieces that pull the embedding away from the question the user meant, so a typed paraphrase fell
below the threshold before any check could accept it.

The search's input is mended whole. The stored question and the exact tier keep the text as written; the
verifier's rule-based guards (numbers, units, negation, entities: guards.py) read both sides with their
lower-case words mended (`correct(text, lowercase_only=True)`: "withuot", "celcius", "wrold cup"), so a
typed negation or unit is still counted; capitalised words are left as typed, so no name is turned into
another; the content-word alignment reads the words as written (it matches typos itself, alignment.py).
A word is mended only when it is unknown (not a whole word of the embedder's vocabulary, not a WordNet
lemma) and either two neighbouring letters swapped give exactly one vocabulary word (from four letters:
"dgos", "trian"), or, from five letters, exactly one vocabulary word is within one edit of it (found with a
table of one-letter deletions, so a lookup costs a few dict reads). Case is ignored, as the (uncased)
embedder ignores it: "PayPal" and "paypal" are mended alike (to "papal", as it happens), so the two still
meet in the search; what the verifier compares is the text as written.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from gateway.cache.words import edit_distance

_TOKEN = re.compile(r"[A-Za-z]+")


class Speller:
    def __init__(self, vocabulary: Iterable[str], known: Callable[[str], bool] | None = None,
                 min_length: int = 5) -> None:
        if min_length < 2:
            raise ValueError(f"min_length must be >= 2, got {min_length}")
        self.min_length = min_length
        self._words = frozenset(w for w in vocabulary if w.isalpha() and w.islower())
        self._known = known or (lambda _: False)
        self._deletes: dict[str, list[str]] = {}
        for word in self._words:
            if len(word) >= min_length - 1:
                for d in _deletions(word):
                    self._deletes.setdefault(d, []).append(word)

    def correct(self, text: str, lowercase_only: bool = False) -> str:
        """The text with each unknown word replaced by its one vocabulary neighbour (lower-cased); words
        with none or several are left as they are, and so are words with a capital when `lowercase_only`."""
        return _TOKEN.sub(lambda m: m.group(0) if lowercase_only and not m.group(0).islower()
                          else self._word(m.group(0)), text)

    def _word(self, token: str) -> str:
        word = token.lower()
        if len(word) < 4 or word in self._words or self._known(word):
            return token  # short, or a real word
        # Two neighbours swapped is the commonest slip, and the least ambiguous: tried first, from 4 letters.
        swaps = {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)} & self._words
        if len(swaps) == 1:
            return swaps.pop()
        if len(word) < self.min_length:
            return token
        candidates = set(self._deletes.get(word, ()))
        for d in _deletions(word):
            if d in self._words:
                candidates.add(d)
            candidates.update(self._deletes.get(d, ()))
        near = [c for c in candidates if edit_distance(word, c, 1) <= 1]
        return near[0] if len(near) == 1 else token


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}

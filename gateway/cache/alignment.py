"""Aligning two questions' content words: each word must find its equivalent on the other side.

A word matches when the stems are equal, when both sit in one synonym group (lexicon.SYNONYM_GROUPS),
when one is a typo of the other (a short edit distance, and at least one of them not a dictionary word:
"mouse" and "moose" are both words, so neither is a typo), or when the embedder finds the two words
near-synonyms (WordVectors). What is left unmatched is a substitution (a word on each side: "dog" for
"cat", "time" for "space", "python" for "java") or an addition (one side only: "in reverse"). Either
refuses the hit, except an addition the embedder finds close to a word of the other side ("capital
city" for "capital"). A closed-class word (a time, a period) left unmatched always refuses.
"""
from __future__ import annotations

from dataclasses import dataclass

from gateway.cache.lexicon import SYNONYM_GROUPS
from gateway.cache.word_vectors import WordVectors
from gateway.cache.words import Word, content_words, edit_distance, sides

_SYNONYMS: dict[str, frozenset[str]] = {}
for _group in SYNONYM_GROUPS:
    for _w in _group:
        _SYNONYMS[_w] = _SYNONYMS.get(_w, frozenset()) | _group


@dataclass(slots=True, frozen=True)
class AlignmentConfig:
    # Chosen on the dev split (benchmarks/semantic_cache_eval.py): see README, "semantic cache".
    substitution_similarity: float = 0.80  # a word for another: near-synonyms only
    addition_similarity: float = 0.55  # a word on one side only: close to some word of the other
    typo_min_length: int = 4  # shorter words are never typos of each other

    def __post_init__(self) -> None:
        for name in ("substitution_similarity", "addition_similarity"):
            value = getattr(self, name)
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [-1, 1], got {value}")
        if self.typo_min_length < 1:
            raise ValueError(f"typo_min_length must be >= 1, got {self.typo_min_length}")


class Aligner:
    def __init__(self, vectors: WordVectors, config: AlignmentConfig | None = None) -> None:
        self.vectors = vectors
        self.config = config or AlignmentConfig()

    def refusal(self, query: str, candidate: str) -> str | None:
        """None when every content word of each question has its equivalent in the other; else why not."""
        a, b = content_words(query), content_words(candidate)
        left_a = [w for w in a if not any(self._same(w, x) for x in b)]
        left_b = [w for w in b if not any(self._same(w, x) for x in a)]
        for w in left_a + left_b:
            if w.closed_class:
                return w.closed_class
        if left_a or left_b:
            reason = self._by_vectors(a, b, left_a, left_b)
            if reason:
                return reason
        return "order" if _reversed(query, candidate) else None

    def _same(self, x: Word, y: Word) -> bool:
        if x.stem == y.stem or x.surface == y.surface:
            return True
        if y.surface in _SYNONYMS.get(x.surface, ()) or y.stem in _SYNONYMS.get(x.stem, ()):
            return True
        return self._typo(x.surface, y.surface)

    def _typo(self, x: str, y: str) -> bool:
        shortest = min(len(x), len(y))
        if shortest < self.config.typo_min_length or x.isdigit() or y.isdigit():
            return False
        if self.vectors.known(x) and self.vectors.known(y):
            return False
        return edit_distance(x, y, 2) <= (1 if shortest < 8 else 2)

    def _by_vectors(self, a: tuple[Word, ...], b: tuple[Word, ...], left_a: list[Word],
                    left_b: list[Word]) -> str | None:
        vectors = self.vectors.vectors([w.surface for w in a + b])
        cfg = self.config

        def best(w: Word, others) -> tuple[float, Word | None]:
            scored = [(float(vectors[w.surface] @ vectors[o.surface]), o) for o in others]
            return max(scored, key=lambda s: s[0], default=(-1.0, None))

        for w, others, rest in [(w, b, left_b) for w in left_a] + [(w, a, left_a) for w in left_b]:
            score, _ = best(w, rest)
            if rest and score < cfg.substitution_similarity:
                return f"substitution:{w.surface}"  # the other side has its own unmatched word
            if not rest and best(w, others)[0] < cfg.addition_similarity:
                return f"addition:{w.surface}"
        return None


def _reversed(query: str, candidate: str) -> bool:
    """Two shared words on opposite sides of the same directional word: "X than Y" / "Y than X"."""
    sides_a, sides_b = sides(query), sides(candidate)
    for marker in sides_a.keys() & sides_b.keys():
        pa, pb = sides_a[marker], sides_b[marker]
        flipped = {w for w in pa.keys() & pb.keys() if pa[w] != pb[w]}
        if any(pa[w] < 0 for w in flipped) and any(pa[w] > 0 for w in flipped):
            return True
    return False

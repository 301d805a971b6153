"""Whether a stored question may answer a query: the guards veto what they read apart (guards.py), then
the pair judge decides (judge.py). Without a judge only near-identical questions pass (`unjudged_cosine`)."""
from __future__ import annotations

from gateway.cache.guards import (
    GUARDS,
    Guard,
    Lexicon,
    first_disagreement,
    misspelt_only,
    same_words,
    shared_lexicon,
)
from gateway.cache.judge import PairJudge


class Verifier:
    def __init__(self, judge: PairJudge | None, guards: dict[str, Guard] = GUARDS,
                 lexicon: Lexicon | None = None, unjudged_cosine: float = 0.95) -> None:
        self.judge = judge
        self.guards = guards  # {}: none (the bare-cosine baseline)
        self.lexicon = lexicon or shared_lexicon()
        self.unjudged_cosine = unjudged_cosine

    def guard_refusal(self, query: str, candidate: str, earlier: str = "", stored_earlier: str = "") -> str | None:
        """The first guard that reads the question, or else the earlier user turns ("context:..."), apart."""
        if not self.guards:
            return None
        failed = first_disagreement(query, candidate, self.lexicon, self.guards)
        if failed is None and (earlier or stored_earlier):
            failed = first_disagreement(earlier, stored_earlier, self.lexicon, self.guards)
            return None if failed is None else "context:" + failed
        return failed

    def judged(self, query: str, candidate: str, score: float, earlier: str = "",
               stored_earlier: str = "") -> str | None:
        """A pair the guards let through: "cosine" when its cosine is under the judge's floor (min_cosine) and
        its words differ by more than misspellings, "judge" when the judge (or, without one, the cosine) refuses
        it. The same words reordered, recased or repunctuated need no judge (it reads many such pairs as hard
        negatives: they look like the one-word changes it was trained to refuse)."""
        if self.guards and same_words(query, candidate) and same_words(earlier, stored_earlier):
            return None
        if self.judge is None:
            return None if not self.guards or score >= self.unjudged_cosine else "cosine"
        if score < self.judge.config.min_cosine and not misspelt_only(query, candidate):
            return "cosine"
        return None if self.judge.accepts(self.judge.probability(query, candidate, earlier, stored_earlier)) \
            else "judge"

    def refusal(self, query: str, candidate: str, score: float = 1.0, earlier: str = "",
                stored_earlier: str = "") -> str | None:
        """None when the candidate may answer the query; else the name of the check that refused it."""
        return self.guard_refusal(query, candidate, earlier, stored_earlier) or \
            self.judged(query, candidate, score, earlier, stored_earlier)

    def load(self) -> None:
        """Load what verifying reads (WordNet, pint's units, the judge's model), so no lookup waits on it."""
        if self.guards:
            self.lexicon.load()
        if self.judge is not None:
            self.judge.load()

"""Verification after retrieval: a FAISS candidate above the threshold is served only if the pair itself
holds up, once rid of phrasing that changes nothing (phrasing.py): first under the rule-based guards (numbers,
units, negation, polarity, named entities), which read lower-case typos mended (`mend`), then under the
content-word alignment (alignment.py: entities of one kind, attributes, times, scopes, order). A pair the
alignment accepts only on the embedder's word vectors must also reach `vector_floor` by cosine. Last, the pair
judge (judge.py), a cross-encoder that reads both questions whole, may refuse what the rules accept and serve
what they refused for want of a word's equivalent.
"""
from __future__ import annotations

from collections.abc import Callable

from gateway.cache.alignment import Aligner, opposite_words
from gateway.cache.guards import GUARDS, Guard, entities_present, first_disagreement
from gateway.cache.judge import PairJudge
from gateway.cache.phrasing import plain


# Earlier turns are the scene, not the question: reworded freely ("I'm planning a trip to Lisbon" / "I'm
# going to visit Lisbon soon"), so they pass the guards (entities in any order) and a cosine floor instead
# of the word-by-word alignment. Chosen on the dev split's multi-turn pairs: paraphrased scenes sit at
# >= 0.74, swapped ones the guards miss ("a beef stew" / "a tomato sauce") at 0.63.
CONTEXT_GUARDS: dict[str, Guard] = {**GUARDS, "entities": entities_present}
CONTEXT_SIMILARITY = 0.72


class Verifier:
    def __init__(self, aligner: Aligner | None, guards: dict[str, Guard] = GUARDS,
                 similarity: Callable[[str, str], float] | None = None,
                 mend: Callable[[str], str] | None = None, vector_floor: float = 0.0,
                 judge: PairJudge | None = None) -> None:
        self.aligner = aligner  # None: the guards alone (the cache before verification)
        self.guards = guards
        self.similarity = similarity  # cosine of two texts' embeddings, for earlier turns; None: not checked
        # Typos mended in what the guards read ("withuot" still negates); None: the text as written.
        self.mend = mend or (lambda text: text)
        # The least cosine at which a pair accepted on word vectors alone is served (CacheConfig.vector_floor).
        self.vector_floor = vector_floor
        self.judge = judge  # None: the rules decide alone

    def refusal(self, query: str, candidate: str, score: float | None = None, earlier: str = "",
                stored_earlier: str = "") -> str | None:
        """None when the candidate may answer the query; else the name of the check that refused it.
        `score`: the pair's cosine, if known; a pair accepted on word vectors alone needs vector_floor.
        `earlier`, `stored_earlier`: each conversation's earlier user turns, which the judge reads too."""
        reason = self.rules_refusal(query, candidate, score)
        if self.needs_judge(reason):
            return self.judged(reason, query, candidate, earlier, stored_earlier)
        return reason

    def needs_judge(self, reason: str | None) -> bool:
        """Whether the judge has a say on a pair the rules judged `reason`."""
        return self.judge is not None and self.judge.overrules(reason)

    def judged(self, reason: str | None, query: str, candidate: str, earlier: str = "",
               stored_earlier: str = "") -> str | None:
        """The final refusal of a pair the rules judged `reason`, once the judge has read it."""
        return self.judge.decide(reason, self.judge.probability(query, candidate, earlier, stored_earlier))

    def rules_refusal(self, query: str, candidate: str, score: float | None = None) -> str | None:
        """refusal() by the guards and the alignment alone."""
        query, candidate = plain(query), plain(candidate)
        mended = self.mend(query), self.mend(candidate)
        failed = first_disagreement(*mended, self.guards)
        if failed is not None or self.aligner is None:
            return failed
        reason, by_vectors = self.aligner.judge(query, candidate)
        if reason is not None and mended != (query, candidate):
            # The alignment's own typo rule takes one edit, or two in long words; the speller mends what
            # it misses ("lisence"). Either reading may stand: the speller also mends some typos wrongly.
            second, by_vectors_mended = self.aligner.judge(*mended)
            if second is None:
                reason, by_vectors = None, by_vectors_mended
        if reason is None and by_vectors and score is not None and score < self.vector_floor:
            return "align:vectors"
        return None if reason is None else "align:" + reason.split(":")[0]

    def prepare(self, stored: str) -> None:
        """Warm what verifying a stored question will need (its content words' vectors)."""
        if self.aligner is not None:
            self.aligner.prepare(plain(stored))

    def context_refusal(self, earlier: str, stored: str) -> str | None:
        """None when two conversations' earlier user turns set the same scene; else why not."""
        if not self.guards:
            return None  # the bare-cosine baseline
        earlier, stored = plain(earlier), plain(stored)
        failed = first_disagreement(self.mend(earlier), self.mend(stored), {**CONTEXT_GUARDS, **{
            k: v for k, v in self.guards.items() if k not in CONTEXT_GUARDS}})
        if failed is not None:
            return "context:" + failed
        if self.aligner is not None and opposite_words(earlier, stored):
            return "context:negation"
        if self.aligner is not None and self.aligner.closed_class_traded(earlier, stored):
            return "context:time"
        if self.aligner is not None and self.aligner.kind_traded(earlier, stored):
            return "context:kind"
        if self.aligner is not None and self.aligner.one_noun_traded(earlier, stored):
            # One noun traded and nothing else reworded: judged as the question itself would be.
            reason = self.aligner.refusal(earlier, stored)
            if reason is not None:
                return "context:" + reason.split(":")[0]
        if self.similarity is not None and earlier.casefold() != stored.casefold() \
                and self.similarity(earlier, stored) < CONTEXT_SIMILARITY:
            return "context:similarity"
        return None

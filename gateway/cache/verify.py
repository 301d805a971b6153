"""Verification after retrieval: a FAISS candidate above the threshold is served only if the pair itself
holds up, once rid of phrasing that changes nothing (phrasing.py): first under the rule-based guards (numbers, units, negation, polarity, named entities), then
under the content-word alignment (alignment.py: entities of one kind, attributes, times, scopes, order).
"""
from __future__ import annotations

from gateway.cache.alignment import Aligner
from gateway.cache.guards import GUARDS, Guard, first_disagreement
from gateway.cache.phrasing import plain


class Verifier:
    def __init__(self, aligner: Aligner | None, guards: dict[str, Guard] = GUARDS) -> None:
        self.aligner = aligner  # None: the guards alone (the cache before verification)
        self.guards = guards

    def refusal(self, query: str, candidate: str) -> str | None:
        """None when the candidate may answer the query; else the name of the check that refused it."""
        query, candidate = plain(query), plain(candidate)
        failed = first_disagreement(query, candidate, self.guards)
        if failed is not None or self.aligner is None:
            return failed
        reason = self.aligner.refusal(query, candidate)
        return None if reason is None else "align:" + reason.split(":")[0]

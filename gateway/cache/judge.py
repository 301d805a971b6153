"""The pair judge: a cross-encoder (gateway/embedding/cross_encoder.py) fine-tuned on labelled question pairs
(benchmarks/train_pair_judge.py) that reads a query and a cached question together and says how likely one
answer serves both. It decides every pair the guards (guards.py) let through.

What it reads is fixed here, for training and serving alike: each side is its conversation's earlier user
turns, then the question, so the same follow-up after another conversation reads as another question.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

# A pair is served when the judge gives at least this probability read both ways round (it was trained on
# both orders, and a pair it doubts in either is a wrong answer it might serve). Chosen on dev5, the split
# held out from the judge's training (benchmarks/judge_thresholds.py): with the guards and the judge retrained
# on action swaps (stop 43), 2 wrong hits and 75-77 % of paraphrases served at every bar from 0.80 to 0.97.
DEFAULT_BAR = 0.95
# The judge's second opinion: the cosine between the two questions. The judge is confidently wrong (p > 0.99)
# on some one-word swaps whose wording moved further ("add" / "drop a column", "chewier" / "crispier": cosine
# 0.63-0.85), while most paraphrases sit above 0.85; those below it are mostly typed ones, which pass when their
# words differ by misspellings only (guards.misspelt_only). Chosen on every split scored before stop 42 (dev4,
# dev5, tune33, heldout32-34: benchmarks/judge_thresholds.py): with no floor 10 of 439 hits were wrong
# (97.7 %) and 86.8 % of paraphrases served; with it 3 of 383 (99.2 %) and 76.9 %.
DEFAULT_MIN_COSINE = 0.85


@dataclass(slots=True, frozen=True)
class JudgeConfig:
    enabled: bool = True  # False: no model; the semantic tier then serves only near-identical questions
    bar: float = DEFAULT_BAR
    min_cosine: float = DEFAULT_MIN_COSINE  # a pair below it is refused unless it differs by misspellings only
    max_pairs: int = 1  # pairs judged per lookup, best cosine first: bounds a lookup's latency

    def __post_init__(self) -> None:
        if not 0.0 <= self.bar <= 1.0:
            raise ValueError(f"bar must be in [0, 1], got {self.bar}")
        if not 0.0 <= self.min_cosine <= 1.0:
            raise ValueError(f"min_cosine must be in [0, 1], got {self.min_cosine}")
        if self.max_pairs < 0:
            raise ValueError(f"max_pairs must be >= 0, got {self.max_pairs}")


class PairScorer(Protocol):
    def probabilities(self, pairs: list[tuple[str, str]]) -> Sequence[float]: ...


def judged_text(question: str, earlier: str = "") -> str:
    """One side of a pair as the judge reads it: earlier user turns (one a line), then the question."""
    return f"{earlier}\n{question}" if earlier.strip() else question


class PairJudge:
    """The probability that a query and a stored question share an answer. `load` builds the model; it is
    called at the first use or by load(), so constructing the cache never waits on it."""

    def __init__(self, load: Callable[[], PairScorer], config: JudgeConfig | None = None) -> None:
        self.config = config or JudgeConfig()
        self._build = load
        self._scorer: PairScorer | None = None
        self._lock = threading.Lock()

    def load(self) -> PairScorer:
        if self._scorer is None:
            with self._lock:
                if self._scorer is None:
                    self._scorer = self._build()
        return self._scorer

    def probability(self, query: str, stored: str, earlier: str = "", stored_earlier: str = "") -> float:
        """The lower of the two readings (query first, then stored first)."""
        a, b = judged_text(query, earlier), judged_text(stored, stored_earlier)
        return float(min(self.load().probabilities([(a, b), (b, a)])))

    def accepts(self, probability: float) -> bool:
        return probability >= self.config.bar

"""The pair judge: a cross-encoder (gateway/embedding/cross_encoder.py) fine-tuned on labelled question pairs
(benchmarks/train_pair_judge.py) that reads a query and a cached question together and says how likely one
answer serves both. verify.py weighs its word against the rule-based alignment's (JudgeConfig).

What it reads is fixed here, for training and serving alike: each side is its conversation's earlier user
turns, then the question, so the same follow-up after another conversation reads as another question.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

# The refusals the judge may overturn, and the probability it must reach for each. Chosen on 3,965 pairs the
# judge had not been trained on (dev5, and each half of `train` scored by a judge trained on the other half;
# benchmarks/judge_thresholds.py --save, README): where the rules found no equivalent for an added word,
# the judge above 0.95 served 156 paraphrases and no negative; for a substituted word it is sure less often
# (above 0.99: 122 paraphrases, 5 negatives). Numbers and units the guards read apart ("2" / "two", "5 km" /
# "5 kilometers") it served above 0.95 with no negative among 280; entities and times only above 0.99.
# Negation, polarity, degree and role order are never overturned: the judge was no better there.
RESCUE: dict[str, float] = {
    "align:addition": 0.95, "align:substitution": 0.99, "align:vectors": 0.99, "align:time": 0.99,
    "numbers": 0.95, "units": 0.95, "entities": 0.99,
}


def _default_rescue() -> dict[str, float]:
    return dict(RESCUE)


@dataclass(slots=True, frozen=True)
class JudgeConfig:
    """When the judge's probability overrides the rules (RESCUE says why these numbers)."""

    enabled: bool = True
    veto: float = 0.5  # a pair the rules accept is refused below this
    # refusal kind ("numbers", "align:substitution") -> the probability at which the pair is served after all
    rescue: dict[str, float] = field(default_factory=_default_rescue)
    max_pairs: int = 1  # pairs judged per lookup, best cosine first: bounds a lookup's latency

    def __post_init__(self) -> None:
        for name, value in [("veto", self.veto), *((f"rescue[{k!r}]", v) for k, v in self.rescue.items())]:
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
            if name != "veto" and value < self.veto:
                raise ValueError(f"{name} ({value}) must not be below veto ({self.veto})")
        if self.max_pairs < 0:
            raise ValueError(f"max_pairs must be >= 0, got {self.max_pairs}")


def refusal_kind(reason: str) -> str:
    """What RESCUE is keyed by: "align:substitution:tap" -> "align:substitution", "numbers" -> "numbers"."""
    parts = reason.split(":")
    return ":".join(parts[:2]) if parts[0] == "align" else parts[0]


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
        pair = (judged_text(query, earlier), judged_text(stored, stored_earlier))
        return float(self.load().probabilities([pair])[0])

    def overrules(self, reason: str | None) -> bool:
        """Whether the judge has a say on a pair the rules judged so: accepted, or refused for a kind it may
        overturn (JudgeConfig.rescue)."""
        return reason is None or refusal_kind(reason) in self.config.rescue

    def decide(self, reason: str | None, probability: float) -> str | None:
        """The final refusal (None: serve) of a pair the rules judged `reason` and the judge `probability`."""
        if reason is None:
            return "judge" if probability < self.config.veto else None
        bar = self.config.rescue.get(refusal_kind(reason))
        return None if bar is not None and probability >= bar else reason

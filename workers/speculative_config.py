"""Speculative decoding's one config object (EngineConfig.speculative, or the catalogue's `engine: speculative:`)."""
from __future__ import annotations

from dataclasses import dataclass, fields

# "ngram": prompt lookup, no extra model; "draft": a smaller Llama-architecture model (or the target's first
# num_layers layers: a self-draft) proposes, run by the model runner.
METHODS = ("ngram", "draft")


@dataclass(slots=True)
class SpeculativeConfig:
    method: str = "ngram"
    num_tokens: int = 4  # k: drafts proposed per sequence and step, all verified in one target forward
    # ngram: the longest suffix of lookup_max..lookup_min tokens found earlier in the sequence (prompt and
    # output) proposes the tokens that followed it.
    lookup_min: int = 2
    lookup_max: int = 4
    # draft: a catalogue name or path the model registry loads; None: the target's own weights. num_layers
    # keeps the draft's first layers only (then its own final norm and head); a self-draft (model None or the
    # target's) must set it, and shares the target's KV cache for those layers.
    model: str | None = None
    num_layers: int | None = None
    # Adaptivity. A step with more running sequences than this drafts for none: a large batch already keeps
    # the weights busy, and verifying tokens that may be rejected then costs more than it saves.
    max_batch_size: int = 8
    # Per sequence, an exponential moving average of the fraction of its drafts accepted (weight ema_weight
    # for the newest step, starting at acceptance_init); below min_acceptance the sequence stops drafting for
    # backoff_steps of its steps, then tries again from acceptance_init.
    min_acceptance: float = 0.25
    ema_weight: float = 0.3
    acceptance_init: float = 0.6
    backoff_steps: int = 16

    @classmethod
    def of(cls, value: SpeculativeConfig | dict | None) -> SpeculativeConfig | None:
        """From EngineConfig.speculative as given: the config itself, a dict of its fields, or None (off)."""
        if value is None or isinstance(value, SpeculativeConfig):
            return value
        if not isinstance(value, dict):
            raise ValueError(f"speculative must be None, a dict or a SpeculativeConfig, got {type(value).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"speculative: unknown keys {unknown}; known: {sorted(known)}")
        return cls(**value)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"speculative.method must be one of {METHODS}, got {self.method!r}")
        for name in ("num_tokens", "lookup_min", "lookup_max", "backoff_steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"speculative.{name} must be an integer >= 1, got {value!r}")
        if self.lookup_min > self.lookup_max:
            raise ValueError(f"speculative.lookup_min ({self.lookup_min}) exceeds lookup_max ({self.lookup_max})")
        if not isinstance(self.max_batch_size, int) or self.max_batch_size < 0:
            raise ValueError(f"speculative.max_batch_size must be an integer >= 0, got {self.max_batch_size!r}")
        if self.num_layers is not None and (not isinstance(self.num_layers, int) or self.num_layers < 1):
            raise ValueError(f"speculative.num_layers must be None or an integer >= 1, got {self.num_layers!r}")
        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise ValueError(f"speculative.model must be None or a non-empty string, got {self.model!r}")
        if self.method == "ngram" and (self.model is not None or self.num_layers is not None):
            raise ValueError("speculative.model and num_layers are for method 'draft'")
        for name in ("min_acceptance", "acceptance_init"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"speculative.{name} must be in [0, 1], got {value!r}")
        if not isinstance(self.ema_weight, (int, float)) or not 0 < self.ema_weight <= 1:
            raise ValueError(f"speculative.ema_weight must be in (0, 1], got {self.ema_weight!r}")

"""Speculative decoding's one config object (EngineConfig.speculative, or the catalogue's `engine: speculative:`)."""
from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Literal

from pydantic import Field

from workers.validation import validated

Positive = Annotated[int, Field(ge=1)]
Fraction = Annotated[float, Field(ge=0, le=1)]


@validated(slots=True)
class SpeculativeConfig:
    # "ngram": prompt lookup, no extra model; "draft": a smaller Llama-architecture model (or the target's first
    # num_layers layers: a self-draft) proposes, run by the model runner.
    method: Literal["ngram", "draft"] = "ngram"
    num_tokens: Positive = 4  # k: drafts proposed per sequence and step, all verified in one target forward
    # ngram: the longest suffix of lookup_max..lookup_min tokens found earlier in the sequence (prompt and
    # output) proposes the tokens that followed it.
    lookup_min: Positive = 2
    lookup_max: Positive = 4
    # draft: a catalogue name or path the model registry loads; None: the target's own weights. num_layers
    # keeps the draft's first layers only (then its own final norm and head); a self-draft (model None or the
    # target's) must set it, and shares the target's KV cache for those layers.
    model: Annotated[str, Field(min_length=1)] | None = None
    num_layers: Positive | None = None
    # Adaptivity. A step with more running sequences than this drafts for none: a large batch already keeps
    # the weights busy, and verifying tokens that may be rejected then costs more than it saves.
    max_batch_size: Annotated[int, Field(ge=0)] = 8
    # Per sequence, an exponential moving average of the fraction of its drafts accepted (weight ema_weight
    # for the newest step, starting at acceptance_init); below min_acceptance the sequence stops drafting for
    # backoff_steps of its steps, then tries again from acceptance_init.
    min_acceptance: Fraction = 0.25
    ema_weight: Annotated[float, Field(gt=0, le=1)] = 0.3
    acceptance_init: Fraction = 0.6
    backoff_steps: Positive = 16

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
        if self.lookup_min > self.lookup_max:
            raise ValueError(f"speculative.lookup_min ({self.lookup_min}) exceeds lookup_max ({self.lookup_max})")
        if self.method == "ngram" and (self.model is not None or self.num_layers is not None):
            raise ValueError("speculative.model and num_layers are for method 'draft'")

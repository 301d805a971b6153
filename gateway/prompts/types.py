"""Plain data: a prompt version, a label's target, what a request asks for. No I/O."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class PromptVersion:
    """Immutable once written: a version's text never changes, so it may be cached forever."""
    name: str
    version: int
    messages: tuple[dict[str, str], ...]  # {"role", "content"}, content holding {{variables}}
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)  # chat request fields (temperature, max_tokens...)
    created_at: datetime | None = None

    @property
    def label(self) -> str:
        """How the version is named on headers and ledger rows: "greeting:2"."""
        return f"{self.name}:{self.version}"


@dataclass(frozen=True, slots=True)
class LabelState:
    """Where a label points now: version -> weight (percent, summing to 100), and where it pointed before."""
    name: str
    label: str
    weights: dict[int, int]
    previous: dict[int, int] | None = None
    revision: int = 1  # bumped on every move
    updated_at: datetime | None = None

    @property
    def single(self) -> int | None:
        """The version when the label points at exactly one."""
        live = [v for v, w in self.weights.items() if w > 0]
        return live[0] if len(live) == 1 else None


@dataclass(frozen=True, slots=True)
class PromptRef:
    """What a chat request names: a prompt, and at most one of a label or a version."""
    name: str
    label: str | None = None
    version: int | None = None
    variables: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.label is not None and self.version is not None:
            raise ValueError("name a label or a version, not both")

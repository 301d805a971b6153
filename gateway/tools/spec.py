"""The functions a request offers and the rule for using them, validated once from the request's `tools` and
`tool_choice`; what prompt.py, grammar.py and parser.py read."""
from __future__ import annotations

from dataclasses import dataclass

MODES = ("none", "auto", "required", "function")


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    description: str | None
    parameters: dict  # a JSON Schema for the arguments object ({"type": "object"} when the tool gave none)

    def declaration(self) -> dict:
        """The function as the model reads it in the prompt."""
        out: dict = {"name": self.name}
        if self.description:
            out["description"] = self.description
        out["parameters"] = self.parameters
        return out


@dataclass(frozen=True, slots=True)
class ToolSet:
    functions: tuple[Function, ...]
    mode: str  # "none" | "auto" | "required" | "function" (one named function)
    forced: str | None = None  # the function tool_choice names, in mode "function"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"tool mode must be one of {MODES}, got {self.mode!r}")
        if (self.mode == "function") != (self.forced is not None):
            raise ValueError("a forced function goes with mode 'function' only")
        if self.forced is not None and self.forced not in self.names:
            raise ValueError(f"tool_choice names {self.forced!r}, which is not among the tools")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.functions)

    @property
    def offered(self) -> tuple[Function, ...]:
        """The functions the model may call: none with tool_choice "none", the named one when forced."""
        if self.mode == "none":
            return ()
        if self.forced is not None:
            return tuple(f for f in self.functions if f.name == self.forced)
        return self.functions

    @property
    def must_call(self) -> bool:
        return self.mode in ("required", "function")

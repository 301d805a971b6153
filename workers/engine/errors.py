"""The engine's errors a caller handles: plain exceptions with no torch behind them, so a gateway that only
reaches replicas through Ray (and carries no torch) can catch what a replica raises."""
from __future__ import annotations


class EngineDeadError(RuntimeError):
    """The engine loop failed or stopped; in-flight and new requests get this."""


class EngineOverloaded(RuntimeError):
    """Too many requests already wait for a batch slot, on this replica (`scope` "replica") or for this
    request's tenant (`scope` "tenant"); nothing was queued. Retry later, or elsewhere."""

    def __init__(self, message: str, scope: str = "replica") -> None:
        super().__init__(message, scope)  # both in args: it pickles across Ray's process boundary
        self.message, self.scope = message, scope

    def __str__(self) -> str:
        return self.message

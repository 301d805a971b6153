"""Routing errors; each names the field (`param`) an API answer should point at."""
from __future__ import annotations


class RoutingError(ValueError):
    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class UnknownModel(RoutingError):
    """No alias, model or version of that name (a 404)."""

    def __init__(self, model: str) -> None:
        super().__init__(f"unknown model {model!r}", param="model")
        self.model = model


class UnknownVersion(RoutingError):
    """A pin or a route change names a version the alias does not have (a 400)."""


class RouteChangeError(RoutingError):
    """A route change is invalid; the running routes are left as they were (a 400)."""

"""One alias' route: plain data plus the invariants every change must keep."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gateway.routing.errors import RouteChangeError


@dataclass(frozen=True, slots=True)
class Route:
    alias: str
    weights: Mapping[str, int]  # version -> percent of traffic; sums to 100
    fallbacks: tuple[str, ...]  # versions, models or aliases, tried in order
    stable: str  # where a rollback sends traffic

    @property
    def canaries(self) -> list[str]:
        return [v for v, w in self.weights.items() if w > 0 and v != self.stable]

    def to_dict(self) -> dict:
        return {"alias": self.alias, "weights": dict(self.weights),
                "fallbacks": list(self.fallbacks), "stable": self.stable}


def make_route(alias: str, weights: object, fallbacks: object, stable: str | None, *,
               versions: Iterable[str], names: Iterable[str]) -> Route:
    """A validated Route. `versions`: every known version; `names`: every name a fallback may use.

    Raises RouteChangeError naming the field (weights, weights.<version>, fallbacks, stable)."""
    known, callable_names = set(versions), set(names)
    if not isinstance(weights, Mapping) or not weights:
        raise RouteChangeError("weights must be a non-empty object of version -> percent", param="weights")
    clean: dict[str, int] = {}
    for version, w in weights.items():
        if version not in known:
            raise RouteChangeError(f"weights: unknown version {version!r}", param=f"weights.{version}")
        if isinstance(w, bool) or not isinstance(w, int):
            raise RouteChangeError(f"weights.{version} must be an integer, got {w!r}", param=f"weights.{version}")
        if w < 0:
            raise RouteChangeError(f"weights.{version} must be >= 0, got {w}", param=f"weights.{version}")
        clean[version] = w
    if sum(clean.values()) != 100:
        raise RouteChangeError(f"weights must sum to 100, got {sum(clean.values())}", param="weights")
    if isinstance(fallbacks, (str, bytes)) or not isinstance(fallbacks, Iterable):
        raise RouteChangeError("fallbacks must be a list of names", param="fallbacks")
    fb = tuple(fallbacks)
    for i, name in enumerate(fb):
        if not isinstance(name, str) or name not in known | callable_names:
            raise RouteChangeError(f"fallbacks[{i}]: unknown version, model or alias {name!r}",
                                   param=f"fallbacks.{i}")
        if name == alias:
            raise RouteChangeError(f"fallbacks[{i}]: an alias cannot fall back to itself", param=f"fallbacks.{i}")
    if stable is None:
        stable = max(clean, key=lambda v: (clean[v], -list(clean).index(v)))
    if stable not in clean:
        raise RouteChangeError(f"stable {stable!r} is not one of the weighted versions", param="stable")
    return Route(alias=alias, weights=dict(clean), fallbacks=fb, stable=stable)

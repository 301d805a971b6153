"""Label targets: validating a weight split, and choosing a version for a caller (sticky per user, with the
canary router's hashing, so a user keeps their version for as long as the split stands)."""
from __future__ import annotations

from collections.abc import Collection, Mapping

from gateway.prompts.errors import InvalidTarget
from gateway.routing.policy import bucket


def target_weights(*, version: int | None = None, weights: Mapping[str, int] | None = None,
                   known: Collection[int]) -> dict[int, int]:
    """A `{"version": N}` or `{"weights": {"1": 50, "2": 50}}` body as version -> weight; InvalidTarget
    when the weights do not sum to 100 or name a version that does not exist."""
    if (version is None) == (weights is None):
        raise InvalidTarget("Give either `version` or `weights`.", param="version")
    if version is not None:
        weights = {str(version): 100}
    out: dict[int, int] = {}
    for key, weight in weights.items():
        try:
            v = int(key)
        except ValueError:
            raise InvalidTarget(f"weights: {key!r} is not a version number.", param="weights") from None
        if weight < 0:
            raise InvalidTarget(f"weights: version {v} has a negative weight.", param="weights")
        out[v] = out.get(v, 0) + weight
    unknown = sorted(v for v in out if v not in known)
    if unknown:
        param = "version" if version is not None else "weights"
        raise InvalidTarget(f"Unknown version(s): {', '.join(map(str, unknown))}.", param=param)
    if sum(out.values()) != 100:
        raise InvalidTarget(f"weights must sum to 100, got {sum(out.values())}.", param="weights")
    return out


def choose(name: str, label: str, weights: Mapping[int, int], key: str) -> int:
    """The version for caller `key` (the request's user, else its request id). Versions are taken in
    number order, so reloads never reshuffle who lands where."""
    point = bucket(f"prompt:{name}:{label}", key)
    upper = 0
    for version in sorted(weights):
        upper += weights[version]
        if point < upper:
            return version
    return max(v for v, w in weights.items() if w > 0)  # only reachable at float edges

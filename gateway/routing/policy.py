"""Pure routing policy: stable hashing, weighted choice, fallback chains, promote and rollback.

No I/O and no clocks: every function maps routes to routes or to version names."""
from __future__ import annotations

import hashlib
from collections.abc import Mapping

from gateway.routing.errors import UnknownVersion
from gateway.routing.route import Route

_BUCKETS = 10_000  # hash resolution: 0.01 percent


def bucket(alias: str, key: str) -> float:
    """A stable point in [0, 100) for a key. Salted with the alias so that one user's
    place in one alias' split says nothing about their place in another's."""
    digest = hashlib.blake2b(f"{alias}\x00{key}".encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "big") % _BUCKETS) * 100 / _BUCKETS


def pick(route: Route, point: float) -> str:
    """The version whose cumulative-weight interval holds `point`. Versions are taken in
    name order so a reload (or a restart) never reshuffles who lands where."""
    upper = 0
    for version in sorted(route.weights):
        upper += route.weights[version]
        if point < upper:
            return version
    return route.stable  # unreachable while weights sum to 100; kept total for float edges


def pinned(route: Route, pin: str) -> str:
    """The version a pin names: a full name (`model@fp32`) or a short one (`fp32`)."""
    full = match_version(pin, route.weights)
    if full is None:
        raise UnknownVersion(f"x-tollgate-version {pin!r} is not a version of {route.alias!r} "
                             f"(one of {sorted(route.weights)})", param="x-tollgate-version")
    return full


def match_version(name: str, versions) -> str | None:
    """A full version name from a full or short one, when unambiguous."""
    versions = list(versions)
    if name in versions:
        return name
    short = [v for v in versions if v.partition("@")[2] == name]
    return short[0] if len(short) == 1 else None


def chain(chosen: str, route: Route, routes: Mapping[str, Route], versions: set[str]) -> list[str]:
    """The chosen version, then the alias' fallbacks expanded to versions, without repeats.

    A fallback naming an alias (or a model) expands to that alias' weighted versions,
    heaviest first, one level deep: fallbacks of fallbacks are not followed (no cycles)."""
    out = [chosen]
    for name in route.fallbacks:
        if name in versions:
            expanded = [name]
        elif name in routes:
            target = routes[name]
            expanded = sorted((v for v, w in target.weights.items() if w > 0),
                              key=lambda v: (v != target.stable, -target.weights[v], v))
        else:
            expanded = []
        out.extend(v for v in expanded if v not in out)
    return out


def promoted(route: Route, version: str) -> Route:
    """All traffic to `version`, which becomes the stable one."""
    weights = dict.fromkeys(route.weights, 0) | {version: 100}
    return Route(route.alias, weights, route.fallbacks, version)


def rolled_back(route: Route) -> Route:
    """Every canary to 0, the stable version to 100."""
    weights = dict.fromkeys(route.weights, 0) | {route.stable: 100}
    return Route(route.alias, weights, route.fallbacks, route.stable)


def without(route: Route, version: str) -> Route:
    """One canary's weight to 0; the stable version takes its share."""
    weights = dict(route.weights)
    share = weights.get(version, 0)
    weights[version] = 0
    weights[route.stable] += share
    return Route(route.alias, weights, route.fallbacks, route.stable)

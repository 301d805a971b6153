"""Rules from their JSON form (the admin API's body, the database row), validated in full.

    [{"name": "short-to-cheap",
      "when": {"prompt_tokens": {"max": 400}, "max_tokens": {"max": 128}, "plan": ["free"], "task": ["chat"]},
      "target": "cheap@v1"}]                      # or a split: {"cheap@v1": 80, "strong@v1": 20}

Every error is a RouteChangeError naming the field (`rules.0.when.task`), so a 400 can point at it."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from gateway.routing import policy
from gateway.routing.errors import RouteChangeError
from gateway.routing.route import Route, make_route
from gateway.routing.rules import Condition, Rule, Span

MAX_RULES = 32
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")  # it travels in a header and a metric label
_WHEN = {"prompt_tokens", "max_tokens", "plan", "task"}


def make_rules(route: Route, raw: object, *, versions: Iterable[str], tasks: Iterable[str]) -> tuple[Rule, ...]:
    """`route`: the alias' live route (short version names resolve against it first); `versions`: every known
    version; `tasks`: the classifier's classes (empty: no classifier, so no task rule is valid)."""
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
        raise RouteChangeError("rules must be a list of rules", param="rules")
    items = list(raw)
    if len(items) > MAX_RULES:
        raise RouteChangeError(f"at most {MAX_RULES} rules per alias, got {len(items)}", param="rules")
    known, classes = list(versions), frozenset(tasks)
    out: list[Rule] = []
    for i, item in enumerate(items):
        rule = _rule(route, item, f"rules.{i}", known, classes)
        if any(r.name == rule.name for r in out):
            raise RouteChangeError(f"rules.{i}.name: {rule.name!r} names two rules", param=f"rules.{i}.name")
        out.append(rule)
    return tuple(out)


def _rule(route: Route, item: object, at: str, versions: list[str], classes: frozenset[str]) -> Rule:
    if not isinstance(item, Mapping):
        raise RouteChangeError(f"{at} must be an object with name, when and target", param=at)
    extra = set(item) - {"name", "when", "target"}
    if extra:
        raise RouteChangeError(f"{at}: unknown field {sorted(extra)[0]!r}", param=f"{at}.{sorted(extra)[0]}")
    name = item.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise RouteChangeError(f"{at}.name must be 1-64 letters, digits or _.:- (starting with a letter or digit)",
                               param=f"{at}.name")
    if "target" not in item:
        raise RouteChangeError(f"{at}.target is required", param=f"{at}.target")
    return Rule(name, _condition(item.get("when", {}), f"{at}.when", classes),
                _target(route, item["target"], f"{at}.target", versions))


def _condition(when: object, at: str, classes: frozenset[str]) -> Condition:
    if not isinstance(when, Mapping):
        raise RouteChangeError(f"{at} must be an object", param=at)
    extra = set(when) - _WHEN
    if extra:
        field = sorted(extra)[0]
        raise RouteChangeError(f"{at}: unknown condition {field!r} (one of {sorted(_WHEN)})", param=f"{at}.{field}")
    tasks = _names(when["task"], f"{at}.task") if "task" in when else None
    if tasks is not None:
        if not classes:
            raise RouteChangeError(f"{at}.task: no task classifier is configured (catalogue routing.classifier)",
                                   param=f"{at}.task")
        unknown = sorted(tasks - classes)
        if unknown:
            raise RouteChangeError(f"{at}.task: unknown class {unknown[0]!r} (one of {sorted(classes)})",
                                   param=f"{at}.task")
    return Condition(
        prompt_tokens=_span(when["prompt_tokens"], f"{at}.prompt_tokens") if "prompt_tokens" in when else None,
        max_tokens=_span(when["max_tokens"], f"{at}.max_tokens") if "max_tokens" in when else None,
        plans=_names(when["plan"], f"{at}.plan") if "plan" in when else None,
        tasks=tasks)


def _span(raw: object, at: str) -> Span:
    if not isinstance(raw, Mapping) or not raw or set(raw) - {"min", "max"}:
        raise RouteChangeError(f"{at} must be an object with min and/or max", param=at)
    bounds = {}
    for side in ("min", "max"):
        value = raw.get(side)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise RouteChangeError(f"{at}.{side} must be an integer >= 0, got {value!r}", param=f"{at}.{side}")
        bounds[side] = value
    if bounds["min"] is not None and bounds["max"] is not None and bounds["min"] > bounds["max"]:
        raise RouteChangeError(f"{at}: min ({bounds['min']}) exceeds max ({bounds['max']})", param=at)
    return Span(bounds["min"], bounds["max"])


def _names(raw: object, at: str) -> frozenset[str]:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(n, str) and n for n in raw):
        raise RouteChangeError(f"{at} must be a non-empty list of names", param=at)
    return frozenset(raw)


def _target(route: Route, raw: object, at: str, versions: list[str]) -> Route:
    """A version name, or a split {version: percent} summing to 100; short names (`fp32`) accepted."""
    split = {raw: 100} if isinstance(raw, str) else raw
    if not isinstance(split, Mapping) or not split:
        raise RouteChangeError(f"{at} must be a version name or an object of version -> percent", param=at)
    full = {}
    for name, weight in split.items():
        version = policy.match_version(name, route.weights) or policy.match_version(name, versions)
        if version is None:
            raise RouteChangeError(f"{at}: unknown version {name!r}", param=at if isinstance(raw, str)
                                   else f"{at}.{name}")
        full[version] = weight
    if len(full) != len(split):
        raise RouteChangeError(f"{at} names the same version twice", param=at)
    try:
        return make_route(route.alias, full, (), None, versions=versions, names=())
    except RouteChangeError as e:
        suffix = (e.param or "").removeprefix("weights")
        raise RouteChangeError(f"{at}: {e}", param=f"{at}{suffix}") from None

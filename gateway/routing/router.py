"""The Router: resolves a requested model name to the versions to try, and owns route changes.

Policy lives in `policy` (pure), the rollback rule in `canary`, persistence behind `RouteStore`.
Reads are lock-free (the route table is replaced, never mutated); changes are serialised,
validated in full, persisted, and only then swapped in, so a bad change leaves routes as they were."""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial

from gateway.catalogue import Catalogue
from gateway.db.errors import database_unavailable
from gateway.routing import policy
from gateway.routing.canary import CanaryMonitor, RollbackPolicy
from gateway.routing.errors import RouteChangeError, RoutingError, UnknownModel, UnknownVersion
from gateway.routing.metrics import ROLLBACKS, VersionMetrics
from gateway.routing.route import Route, make_route
from gateway.routing.rule_spec import make_rules
from gateway.routing.rules import Facts, Rule, first_match, needs_task
from gateway.routing.store import AuditEntry, MemoryRouteStore, RouteStore

log = logging.getLogger(__name__)

AUTO_ROLLBACK_ACTOR = "auto-rollback"


@dataclass(frozen=True, slots=True)
class RouteDecision:
    alias: str  # the name the client called
    model: str  # the priced, public model of the chosen version
    candidates: list[str]  # versions to try in order: the chosen one, then the fallbacks
    pinned: bool = False
    rule: str | None = None  # the routing rule that decided, if one did

    @property
    def version(self) -> str:
        return self.candidates[0]


class Router:
    def __init__(self, catalogue: Catalogue, *, store: RouteStore | None = None,
                 rollback: RollbackPolicy | None = None, clock: Callable[[], float] = time.monotonic,
                 task_labels: Iterable[str] = ()) -> None:
        self._versions = set(catalogue.version_names())
        self.task_labels = frozenset(task_labels)  # the task classifier's classes: what rules may name
        self._store = store if store is not None else MemoryRouteStore()
        self._monitor = CanaryMonitor(rollback or RollbackPolicy())
        self.metrics = VersionMetrics(self._monitor.policy.window_s, clock)
        self._lock = threading.Lock()
        self._listeners: list[Callable[[str], None]] = []
        specs = catalogue.alias_specs()
        self._names = set(specs) | set(catalogue.models)
        self._defaults = {a: make_route(a, s.weights, s.fallbacks, s.stable_version,
                                        versions=self._versions, names=self._names) for a, s in specs.items()}
        self._routes: Mapping[str, Route] = {**self._defaults, **self._valid_overrides()}
        self._rules: Mapping[str, tuple[Rule, ...]] = self._valid_rules(self._routes)

    def _valid_overrides(self) -> dict[str, Route]:
        """Persisted overrides that still fit the catalogue; one naming a removed version
        is reported and ignored (the catalogue default serves) rather than failing start-up."""
        out = {}
        for alias, r in self._store.load_routes().items():
            if alias not in self._defaults:
                log.warning("route override for %r ignored: the catalogue has no such alias", alias)
                continue
            try:
                out[alias] = make_route(alias, r.weights, r.fallbacks, r.stable,
                                        versions=self._versions, names=self._names)
            except RouteChangeError as e:
                log.warning("route override for %r ignored (catalogue default serves): %s", alias, e)
        return out

    def _valid_rules(self, routes: Mapping[str, Route]) -> dict[str, tuple[Rule, ...]]:
        """Persisted rules that still fit the catalogue and the classifier; others are reported and ignored
        (the alias' split serves every request) rather than failing start-up."""
        out = {}
        for alias, raw in self._store.load_rules().items():
            if alias not in routes:
                log.warning("routing rules for %r ignored: the catalogue has no such alias", alias)
                continue
            try:
                rules = make_rules(routes[alias], raw, versions=self._versions, tasks=self.task_labels)
            except RouteChangeError as e:
                log.warning("routing rules for %r ignored (its split serves every request): %s", alias, e)
                continue
            if rules:
                out[alias] = rules
        return out

    # -- reads ---------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every name a client may call (aliases, model names)."""
        return sorted(self._routes)

    def resolve(self, model: str, *, request_id: str, user: str | None = None,
                pin: str | None = None, facts: Facts | None = None) -> RouteDecision:
        """The versions to try for a request. `user` (or a session id) keeps a caller on one
        version; without it the request id decides. `pin` is the x-tollgate-version header, which
        bypasses routing rules; `facts` (None: no rule is evaluated) let the alias' rules decide."""
        routes = self._routes
        route = routes.get(model)
        if route is None:
            if model in self._versions and pin is None:
                return RouteDecision(model, model.partition("@")[0], [model], pinned=True)
            raise UnknownModel(model)
        key = user or request_id
        if pin is not None:
            chosen = policy.pinned(route, pin)
        else:
            chosen = policy.pick(route, policy.bucket(route.alias, key))
        candidates = policy.chain(chosen, route, routes, self._versions)
        rule = None if pin is not None or facts is None else first_match(self._rules.get(route.alias, ()), facts)
        if rule is None:
            return RouteDecision(route.alias, chosen.partition("@")[0], candidates, pinned=pin is not None)
        # The rule's pick first; should it have no capacity, the rest of its split, then wherever the
        # alias would have sent the request without the rule, with the alias' fallbacks.
        picked = policy.pick(rule.target, policy.bucket(f"{route.alias}\x00{rule.name}", key))
        rest = sorted((v for v, w in rule.target.weights.items() if w > 0 and v != picked),
                      key=lambda v: (-rule.target.weights[v], v))
        ordered = list(dict.fromkeys([picked, *rest, *candidates]))
        return RouteDecision(route.alias, picked.partition("@")[0], ordered, rule=rule.name)

    def wants_task(self, model: str, facts: Facts) -> bool:
        """Whether the alias' rules need the request's task class to decide (so an embedding is worth it)."""
        route = self._routes.get(model)
        return route is not None and needs_task(self._rules.get(route.alias, ()), facts)

    def rules(self, alias: str) -> list[dict]:
        """An alias' routing rules in their JSON form, in evaluation order."""
        if alias not in self._routes:
            raise UnknownModel(alias)
        return [r.to_dict() for r in self._rules.get(alias, ())]

    def route(self, alias: str) -> dict:
        route = self._routes.get(alias)
        if route is None:
            raise UnknownModel(alias)
        return self._view(route)

    def routes_snapshot(self) -> dict[str, dict]:
        return {alias: self._view(r) for alias, r in sorted(self._routes.items())}

    def audit(self, *, alias: str | None = None, limit: int = 100) -> list[AuditEntry]:
        return self._store.audit(alias=alias, limit=limit)

    def _view(self, route: Route) -> dict:
        versions = {v: {"weight": w, **self.metrics.stats(v).to_dict()} for v, w in route.weights.items()}
        source = "catalogue" if route == self._defaults.get(route.alias) else "override"
        return {**route.to_dict(), "canaries": route.canaries, "source": source, "versions": versions}

    # -- outcomes ------------------------------------------------------------------------

    def observe(self, version: str, *, ok: bool, ttft_s: float | None, latency_s: float) -> None:
        """Record one attempt's outcome on a version (call it for every version tried,
        fallbacks included); a canary doing worse than its stable version is rolled back."""
        self.metrics.record(version, ok=ok, ttft_s=ttft_s, latency_s=latency_s)
        for v in self._monitor.verdicts(version, self._routes, self.metrics.stats):
            log.warning("auto-rollback: %s leaves %s: %s", v.version, v.alias, v.reason)
            self._change(v.alias, partial(policy.without, version=v.version), actor=AUTO_ROLLBACK_ACTOR,
                         action="auto-rollback", reason=f"{v.version}: {v.reason}")
            ROLLBACKS.labels(v.alias, v.version).inc()

    # -- changes -------------------------------------------------------------------------

    def set_weights(self, alias: str, weights: Mapping[str, int], fallbacks: list[str] | None = None,
                    actor: str = "operator", *, stable: str | None = None, request_id: str | None = None) -> dict:
        """Replace an alias' split (versions left out keep weight 0, so they stay pinnable).
        Short version names (`fp32`) are accepted. `fallbacks` None keeps the current ones."""
        if not isinstance(weights, Mapping):
            raise RouteChangeError("weights must be an object of version -> percent", param="weights")

        def build(current: Route) -> Route:
            given = {self._full_name(current, v): w for v, w in weights.items()}
            if len(given) != len(weights):
                raise RouteChangeError("weights name the same version twice", param="weights")
            merged = dict.fromkeys(current.weights, 0) | given
            # The stable version stays stable while it keeps traffic; else the heaviest takes over.
            still_live = isinstance(merged.get(current.stable), int) and merged[current.stable] > 0
            keep = current.stable if still_live else None
            target = self._full_name(current, stable) if stable is not None else keep
            return make_route(alias, merged, current.fallbacks if fallbacks is None else fallbacks, target,
                              versions=self._versions, names=self._names)
        return self._view(self._change(alias, build, actor=actor, action="set", request_id=request_id))

    def promote(self, alias: str, version: str, actor: str = "operator", *,
                request_id: str | None = None) -> dict:
        """All traffic to `version`, which becomes the stable one."""
        def build(current: Route) -> Route:
            full = self._full_name(current, version)
            if full not in self._versions:
                raise UnknownVersion(f"version: unknown version {version!r}", param="version")
            return policy.promoted(current, full)
        return self._view(self._change(alias, build, actor=actor, action="promote", request_id=request_id))

    def rollback(self, alias: str, actor: str = "operator", *, request_id: str | None = None) -> dict:
        """Every canary to 0, the stable version to 100."""
        return self._view(self._change(alias, policy.rolled_back, actor=actor, action="rollback",
                                       request_id=request_id))

    def set_rules(self, alias: str, raw: object, actor: str = "operator", *,
                  request_id: str | None = None) -> list[dict]:
        """Replace an alias' rules (an empty list removes them); validated in full before anything changes."""
        if not isinstance(actor, str) or not actor:
            raise RoutingError("actor must be a non-empty string", param="actor")
        with self._lock:
            route = self._routes.get(alias)
            if route is None:
                raise UnknownModel(alias)
            new = make_rules(route, raw, versions=self._versions, tasks=self.task_labels)
            before = [r.to_dict() for r in self._rules.get(alias, ())]
            after = [r.to_dict() for r in new]
            self._store.save_rules(alias, after, AuditEntry(actor, "rules", alias, {"rules": before},
                                                            {"rules": after}, request_id=request_id))
            self._rules = {**{a: r for a, r in self._rules.items() if a != alias}, **({alias: new} if new else {})}
        self._notify(alias)
        return after

    def _full_name(self, route: Route, name: str) -> str:
        return (policy.match_version(name, route.weights) or policy.match_version(name, self._versions)
                or name)

    def _change(self, alias: str, build: Callable[[Route], Route], *, actor: str, action: str,
                reason: str | None = None, request_id: str | None = None) -> Route:
        if not isinstance(actor, str) or not actor:
            raise RoutingError("actor must be a non-empty string", param="actor")
        with self._lock:
            current = self._routes.get(alias)
            if current is None:
                raise UnknownModel(alias)
            new = build(current)
            # Re-check the invariants whatever built the route (policy helpers included).
            new = make_route(alias, new.weights, new.fallbacks, new.stable,
                             versions=self._versions, names=self._names)
            if new == current and actor == AUTO_ROLLBACK_ACTOR:
                return current  # already rolled back (two verdicts raced): nothing to record
            try:
                self._store.save(new, AuditEntry(actor, action, alias, current.to_dict(), new.to_dict(), reason,
                                                 request_id=request_id))
            except Exception as e:
                # A failing canary leaves rotation even while the database is down (in this process;
                # it is not persisted). An operator's change is refused instead: a 503 to retry.
                if actor != AUTO_ROLLBACK_ACTOR or not database_unavailable(e):
                    raise
                log.error("auto-rollback of %s applied in memory only: the database is unreachable (%s)",
                          alias, type(e).__name__)
            self._routes = {**self._routes, alias: new}
        self._reset_rejoined(current, new)
        self._notify(alias)
        return new

    def _reset_rejoined(self, before: Route | None, after: Route) -> None:
        # Outcomes from before a change say little about a version brought (back) into rotation.
        for v, w in after.weights.items():
            if w > 0 and (before is None or before.weights.get(v, 0) == 0):
                self.metrics.reset(v)

    # -- replicas (gateway.events) ---------------------------------------------------------

    def listen(self, listener: Callable[[str], None]) -> None:
        """Call `listener(alias)` after every change this router persists, operators' and automatic
        rollbacks alike. A failing listener is logged; the change stands."""
        self._listeners.append(listener)

    def _notify(self, alias: str) -> None:
        for listener in self._listeners:
            try:
                listener(alias)
            except Exception:
                log.exception("route change listener failed", extra={"alias": alias})

    def reload(self, alias: str | None = None) -> None:
        """Re-read the persisted overrides that another replica changed: one alias, or every one.
        An alias without a (valid) override goes back to its catalogue default."""
        with self._lock:  # a change of this router's own is persisted and swapped under it too
            overrides = self._valid_overrides()
            before = self._routes
            aliases = list(self._defaults) if alias is None else [alias]
            fresh = {a: overrides.get(a, self._defaults[a]) for a in aliases if a in self._defaults}
            self._routes = {**before, **fresh}
            rules = self._valid_rules(self._routes)
            self._rules = {**{a: r for a, r in self._rules.items() if a not in fresh},
                           **{a: r for a, r in rules.items() if a in fresh}}
        for a, route in fresh.items():
            self._reset_rejoined(before.get(a), route)

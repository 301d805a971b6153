"""A guardrail rule as data, and the validation that turns an admin's JSON into rules (or a RuleError naming the
field). Stored rules are re-parsed with the same code, so a rule in force has always passed it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gateway.guardrails.detectors.registry import DETECTORS, ENTITIES
from gateway.guardrails.errors import RuleError
from gateway.guardrails.safe_regex import SafePattern, UnsafePattern

STAGES = ("input", "output")
MODES = ("block", "redact", "log_only")
# Which stages and modes each kind can take: a limit or a model cannot be redacted, only refused or noted.
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "deny_pattern": (STAGES, MODES),
    "pii": (STAGES, MODES),
    "max_prompt_tokens": (("input",), ("block", "log_only")),
    "model_access": (("input",), ("block", "log_only")),
}
MAX_RULES = 100
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")  # shown in errors and the x-tollgate-guardrails header
_COMMON = {"name", "stage", "kind", "mode", "key_id", "fail_open"}
_FIELDS = _COMMON | {"pattern", "entities", "limit", "allow_models", "deny_models"}
# The fields each kind reads; another kind's field on a rule is refused, not silently ignored.
_KIND_FIELDS = {"deny_pattern": {"pattern"}, "pii": {"entities"}, "max_prompt_tokens": {"limit"},
                "model_access": {"allow_models", "deny_models"}}


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    stage: str  # "input" | "output"
    kind: str  # a KINDS key
    mode: str  # "block" | "redact" | "log_only"
    pattern: str | None = None  # deny_pattern: RE2 syntax
    entities: tuple[str, ...] = ()  # pii: DETECTORS names
    limit: int | None = None  # max_prompt_tokens
    allow_models: tuple[str, ...] | None = None  # model_access: only these (None: any)
    deny_models: tuple[str, ...] = ()  # model_access: never these
    key_id: str | None = None  # None: every key of the tenant
    fail_open: bool = False  # a rule that raises lets the text through (logged) instead of refusing it
    compiled: SafePattern | None = field(default=None, compare=False, repr=False)

    @property
    def max_match(self) -> int:
        """The longest text one match can span: how much a stream must hold back for this rule."""
        if self.kind == "pii":
            return max(DETECTORS[e].max_len for e in self.entities)
        return DENY_PATTERN_WINDOW if self.kind == "deny_pattern" else 0

    def applies_to(self, key_id: str | None) -> bool:
        return self.key_id is None or self.key_id == key_id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "stage": self.stage, "kind": self.kind, "mode": self.mode}
        optional = {"pattern": self.pattern, "entities": list(self.entities) or None, "limit": self.limit,
                    "allow_models": None if self.allow_models is None else list(self.allow_models),
                    "deny_models": list(self.deny_models) or None, "key_id": self.key_id}
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.fail_open:
            out["fail_open"] = True
        return out


# A deny pattern's match may be this long and still never reach a streaming client in part; a longer one
# (`secret.*plan` over a long answer) can have its beginning sent before its end arrives.
DENY_PATTERN_WINDOW = 256


def parse_rules(raw: Any) -> list[Rule]:
    """Rules from JSON (a list, or {"rules": [...]}); RuleError names the first bad field as `rules[i].field`."""
    if isinstance(raw, dict) and set(raw) == {"rules"}:
        raw = raw["rules"]
    if not isinstance(raw, list):
        raise RuleError("Expected a list of rules (or {\"rules\": [...]}).", "rules")
    if len(raw) > MAX_RULES:
        raise RuleError(f"At most {MAX_RULES} rules per tenant.", "rules")
    rules = [parse_rule(item, f"rules[{i}]") for i, item in enumerate(raw)]
    seen: set[str] = set()
    for i, r in enumerate(rules):
        if r.name in seen:
            raise RuleError(f"Two rules are named {r.name!r}; names must be unique.", f"rules[{i}].name")
        seen.add(r.name)
    return rules


def parse_rule(raw: Any, where: str = "rule") -> Rule:
    if not isinstance(raw, dict):
        raise RuleError("A rule is an object.", where)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise RuleError(f"Unknown field {unknown[0]!r}.", f"{where}.{unknown[0]}")
    name = _text(raw, "name", where, required=True)
    if not _NAME.fullmatch(name):
        raise RuleError("name: 1-64 letters, digits, or _ . : -", f"{where}.name")
    kind = _choice(raw, "kind", tuple(KINDS), where)
    foreign = sorted(set(raw) - _COMMON - _KIND_FIELDS[kind])
    if foreign:
        raise RuleError(f"{foreign[0]!r} does not apply to a {kind} rule.", f"{where}.{foreign[0]}")
    stages, modes = KINDS[kind]
    stage = _choice(raw, "stage", stages, where)
    mode = _choice(raw, "mode", modes, where)
    fail_open = raw.get("fail_open", False)
    if not isinstance(fail_open, bool):
        raise RuleError("fail_open must be true or false.", f"{where}.fail_open")
    rule = Rule(name=name, stage=stage, kind=kind, mode=mode, key_id=_text(raw, "key_id", where),
                fail_open=fail_open)
    return _KIND_PARSERS[kind](rule, raw, where)


def _deny_pattern(rule: Rule, raw: dict, where: str) -> Rule:
    pattern = _text(raw, "pattern", where, required=True)
    try:
        compiled = SafePattern(pattern)
    except UnsafePattern as e:
        raise RuleError(f"pattern: {e}", f"{where}.pattern") from None
    return _with(rule, pattern=pattern, compiled=compiled)


def _pii(rule: Rule, raw: dict, where: str) -> Rule:
    entities = raw.get("entities", list(ENTITIES))
    if not isinstance(entities, list) or not entities or not all(isinstance(e, str) for e in entities):
        raise RuleError("entities must be a non-empty list of names.", f"{where}.entities")
    unknown = [e for e in entities if e not in DETECTORS]
    if unknown:
        raise RuleError(f"Unknown entity {unknown[0]!r}; known: {', '.join(ENTITIES)}.", f"{where}.entities")
    return _with(rule, entities=tuple(dict.fromkeys(entities)))


def _max_prompt_tokens(rule: Rule, raw: dict, where: str) -> Rule:
    limit = raw.get("limit")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise RuleError("limit must be a positive integer (prompt tokens).", f"{where}.limit")
    return _with(rule, limit=limit)


def _model_access(rule: Rule, raw: dict, where: str) -> Rule:
    allow, deny = raw.get("allow_models"), raw.get("deny_models", [])
    for key, value in (("allow_models", allow), ("deny_models", deny)):
        if value is not None and (not isinstance(value, list) or not all(isinstance(m, str) and m for m in value)):
            raise RuleError(f"{key} must be a list of model names.", f"{where}.{key}")
    if allow is None and not deny:
        raise RuleError("model_access needs allow_models or deny_models.", f"{where}.allow_models")
    return _with(rule, allow_models=None if allow is None else tuple(allow), deny_models=tuple(deny))


_KIND_PARSERS = {"deny_pattern": _deny_pattern, "pii": _pii, "max_prompt_tokens": _max_prompt_tokens,
                 "model_access": _model_access}


def _with(rule: Rule, **changes: Any) -> Rule:
    values = {f: getattr(rule, f) for f in Rule.__dataclass_fields__}
    return Rule(**{**values, **changes})


def _text(raw: dict, key: str, where: str, *, required: bool = False) -> str | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise RuleError(f"{key} must be a non-empty string.", f"{where}.{key}")
    return value


def _choice(raw: dict, key: str, allowed: tuple[str, ...], where: str) -> str:
    value = raw.get(key)
    if value not in allowed:
        raise RuleError(f"{key} must be one of {', '.join(allowed)} here; got {value!r}.", f"{where}.{key}")
    return value

"""`tollgate admin ...`: tenants, keys, prices, bills and economics through a running gateway's admin API."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field

import httpx

from gateway.cli.admin_client import add_connection_args, call, print_json


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    body: dict | None = None
    params: dict = field(default_factory=dict)


def limit(text: str) -> int | None:
    """An integer, or "none" to clear the limit."""
    return None if text.lower() == "none" else int(text)


def plan(text: str) -> str | None:
    """A plan name, or "none" to clear it."""
    return None if text.lower() == "none" else text


def _flag(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError("expected true or false")
    return text.lower() == "true"


_TENANT_OPTIONS = [  # (flag, body field, type)
    ("--rpm", "rpm", limit), ("--tpm", "tpm", limit), ("--budget", "monthly_token_budget", limit),
    ("--cache-enabled", "cache_enabled", _flag), ("--cache-allow-sampling", "cache_allow_sampling", _flag),
    ("--cache-threshold", "cache_threshold", float), ("--cache-ttl", "cache_ttl_s", limit),
    ("--cache-max-entries", "cache_max_entries", limit),
    ("--priority", "priority", int), ("--share-weight", "share_weight", float), ("--plan", "plan", plan),
]


def _tenant_body(args: argparse.Namespace, fields: list[str]) -> dict:
    """Only the options given (SUPPRESS leaves the others unset), so "--rpm none" sends null."""
    return {f: getattr(args, f) for f in fields if hasattr(args, f)}


def _tenant_fields() -> list[str]:
    return [f for _, f, _ in _TENANT_OPTIONS]


def _add_tenant_options(p: argparse.ArgumentParser) -> None:
    for flag, dest, kind in _TENANT_OPTIONS:
        p.add_argument(flag, dest=dest, type=kind, default=argparse.SUPPRESS)


def _prompt_body(args: argparse.Namespace) -> dict:
    """The version's content from a JSON file ({"messages", "model"?, "params"?}), with the name and owner."""
    with open(args.file) as f:
        content = json.load(f)
    if not isinstance(content, dict):
        raise SystemExit(f"{args.file}: expected a JSON object with messages, model and params")
    return {**content, "name": args.name, **({"tenant_id": args.tenant} if args.tenant else {})}


def _month(p: argparse.ArgumentParser) -> None:
    p.add_argument("--month", help="YYYY-MM (default: this month, UTC)")


def _leaf(sub, name: str, help: str, build) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help)
    add_connection_args(p)
    p.set_defaults(handler=run, build=build)
    return p


def register(subparsers: argparse._SubParsersAction) -> None:
    admin = subparsers.add_parser("admin", help="administer a running gateway")
    groups = admin.add_subparsers(dest="admin_command", required=True)

    tenants = groups.add_parser("tenants", help="create, list, update tenants").add_subparsers(
        dest="action", required=True)
    p = _leaf(tenants, "create", "create a tenant", lambda a: Call(
        "POST", "/admin/tenants", {"name": a.name, **_tenant_body(a, _tenant_fields())}))
    p.add_argument("name")
    _add_tenant_options(p)
    _leaf(tenants, "list", "every tenant", lambda a: Call("GET", "/admin/tenants"))
    p = _leaf(tenants, "update", "change a tenant (limits: a number, or none)", lambda a: Call(
        "PATCH", f"/admin/tenants/{a.tenant_id}",
        _tenant_body(a, ["name", "status", *_tenant_fields()])))
    p.add_argument("tenant_id")
    p.add_argument("--name", default=argparse.SUPPRESS)
    p.add_argument("--status", choices=["active", "disabled"], default=argparse.SUPPRESS)
    _add_tenant_options(p)

    keys = groups.add_parser("keys", help="issue and revoke API keys").add_subparsers(
        dest="action", required=True)
    p = _leaf(keys, "create", "issue a key (printed once)", lambda a: Call(
        "POST", f"/admin/tenants/{a.tenant_id}/keys", {k: v for k, v in {
            "models": a.models, "expires_at": a.expires_at, "rpm": a.rpm, "tpm": a.tpm}.items()
            if v is not None}))
    p.add_argument("tenant_id")
    p.add_argument("--model", action="append", dest="models", help="allowed model (repeat; default all)")
    p.add_argument("--expires-at", help="ISO 8601 time")
    p.add_argument("--rpm", type=int)
    p.add_argument("--tpm", type=int)
    p = _leaf(keys, "list", "a tenant's keys", lambda a: Call("GET", f"/admin/tenants/{a.tenant_id}/keys"))
    p.add_argument("tenant_id")
    p = _leaf(keys, "revoke", "revoke a key", lambda a: Call("DELETE", f"/admin/keys/{a.key_id}"))
    p.add_argument("key_id")

    prices = groups.add_parser("prices", help="model prices per million tokens").add_subparsers(
        dest="action", required=True)
    _leaf(prices, "list", "every price and its history", lambda a: Call("GET", "/admin/prices"))
    p = _leaf(prices, "set", "set a model's price", lambda a: Call("PUT", f"/admin/prices/{a.model}", {
        k: v for k, v in {"input_per_million": a.input, "output_per_million": a.output,
                          "cached_input_per_million": a.cached_input,
                          "cached_output_per_million": a.cached_output,
                          "effective_from": a.effective_from}.items() if v is not None}))
    p.add_argument("model")
    # Decimal strings travel as they are typed: no float rounding on the way.
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--cached-input")
    p.add_argument("--cached-output")
    p.add_argument("--effective-from", help="ISO 8601 time (default: now)")

    prompts = groups.add_parser("prompts", help="stored prompts and their owners").add_subparsers(
        dest="action", required=True)
    p = _leaf(prompts, "create", "create a prompt (version 1) from a JSON file", lambda a: Call(
        "POST", "/admin/prompts", _prompt_body(a)))
    p.add_argument("name")
    p.add_argument("--file", required=True, help='JSON: {"messages": [...], "model"?: ..., "params"?: {...}}')
    p.add_argument("--tenant", help="the owning tenant's id: only its keys can use the prompt (default: shared)")
    p = _leaf(prompts, "list", "every prompt with its owner (tenant_id null: shared)", lambda a: Call(
        "GET", "/admin/prompts", params={"tenant_id": a.tenant} if a.tenant else {}))
    p.add_argument("--tenant", help="only this tenant's own prompts")
    p = _leaf(prompts, "show", "a prompt's owner, versions and labels", lambda a: Call(
        "GET", f"/admin/prompts/{a.name}"))
    p.add_argument("name")

    p = _leaf(groups, "bill", "a tenant's bill for a month", lambda a: Call(
        "GET", f"/admin/tenants/{a.tenant}/bill", params=_params(a)))
    p.add_argument("--tenant", required=True)
    _month(p)
    _month(_leaf(groups, "bills", "every tenant's bill for a month",
                 lambda a: Call("GET", "/admin/bills", params=_params(a))))
    p = _leaf(groups, "usage-csv", "the month's ledger as CSV", lambda a: Call(
        "GET", "/admin/usage.csv", params={**_params(a), **({"tenant_id": a.tenant} if a.tenant else {})}))
    _month(p)
    p.add_argument("--tenant", help="only this tenant")
    p.add_argument("--output", "-o", help="write to this file (default: stdout)")

    costs = groups.add_parser("costs", help="replica-hour prices per model version").add_subparsers(
        dest="action", required=True)
    _leaf(costs, "list", "every replica-hour price and its history", lambda a: Call("GET", "/admin/versions/costs"))
    p = _leaf(costs, "set", "set a version's replica-hour price", lambda a: Call(
        "PUT", f"/admin/versions/{a.version}/cost", {k: v for k, v in {
            "per_replica_hour": a.per_replica_hour, "hardware": a.hardware,
            "effective_from": a.effective_from}.items() if v is not None}))
    p.add_argument("version", help="model@version")
    p.add_argument("--per-replica-hour", required=True, help="a decimal, in the gateway's currency")
    p.add_argument("--hardware", help='e.g. "2 vCPU", "1×H100" (default: unchanged)')
    p.add_argument("--effective-from", help="ISO 8601 time (default: now)")

    p = _leaf(groups, "economics", "a month's revenue, serving cost and margin per model, version and tenant",
              lambda a: Call("GET", "/admin/economics.csv" if a.csv else "/admin/economics", params={
                  **_params(a), **{k: v for k, v in {"utilisation": a.utilisation,
                                                     "throughput": a.throughput}.items() if v is not None}}))
    _month(p)
    p.add_argument("--utilisation", help="what break-even prices assume, in (0, 1] (default 0.6)")
    p.add_argument("--throughput", help="output tokens per busy second per replica (default: measured)")
    p.add_argument("--csv", action="store_true", help="CSV instead of JSON")
    p.add_argument("--output", "-o", help="write the CSV to this file (default: stdout)")


def _params(args: argparse.Namespace) -> dict:
    return {"month": args.month} if args.month else {}


def run(args: argparse.Namespace, client: httpx.Client | None = None) -> int:
    c: Call = args.build(args)
    resp = call(args, c.method, c.path, body=c.body, params=c.params, client=client)
    if resp is None or "json" in resp.headers.get("content-type", ""):
        return print_json(resp)
    if getattr(args, "output", None):
        with open(args.output, "w", newline="") as f:
            f.write(resp.text)
    else:
        sys.stdout.write(resp.text)
    return 0

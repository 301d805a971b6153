"""`tollgate routes list|set|promote|rollback|rules|audit`: the admin routes API from a terminal.

    tollgate routes set chat stable=90 canary=10    # short version names or full model@version
    tollgate routes promote chat bf16
    tollgate routes rules chat --set rules.json     # a JSON list of rules (README: Routing rules); [] clears
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx

from gateway.cli.admin_client import add_connection_args, call
from gateway.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `routes` sub-command to the tollgate console."""
    p = subparsers.add_parser("routes", help="show and change model routes (canary splits)")
    add_connection_args(p)
    sub = p.add_subparsers(dest="routes_command", required=True)
    sub.add_parser("list", help="every alias and its split")
    s = sub.add_parser("set", help="set an alias' weights: VERSION=PERCENT ... (sum 100)")
    s.add_argument("alias")
    s.add_argument("weights", nargs="+", metavar="VERSION=PERCENT")
    s.add_argument("--fallback", action="append", dest="fallbacks", help="a fallback (repeat; default: keep)")
    pr = sub.add_parser("promote", help="send all traffic to one version")
    pr.add_argument("alias")
    pr.add_argument("version")
    rb = sub.add_parser("rollback", help="canaries to 0, stable to 100")
    rb.add_argument("alias")
    ru = sub.add_parser("rules", help="show an alias' routing rules, or replace them from a JSON file")
    ru.add_argument("alias")
    ru.add_argument("--set", dest="rules_file", metavar="FILE", help="a JSON list of rules; - reads stdin")
    au = sub.add_parser("audit", help="recent route changes")
    au.add_argument("--alias")
    au.add_argument("--limit", type=int, default=20)
    p.set_defaults(handler=run)


def parse_weights(items: list[str]) -> dict[str, int]:
    """["fp32=90", "bf16=10"] -> {"fp32": 90, "bf16": 10}; ValueError naming the bad item."""
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"expected VERSION=PERCENT, got {item!r}")
        try:
            out[name] = int(value)
        except ValueError:
            raise ValueError(f"{name}: percent must be an integer, got {value!r}") from None
    return out


def _request(args: argparse.Namespace) -> tuple[str, str, dict | None]:
    a = args.routes_command
    if a == "list":
        return "GET", "/admin/routes", None
    if a == "set":
        body: dict = {"weights": parse_weights(args.weights)}
        if args.fallbacks:
            body["fallbacks"] = args.fallbacks
        return "PUT", f"/admin/routes/{args.alias}", body
    if a == "promote":
        return "POST", f"/admin/routes/{args.alias}/promote", {"version": args.version}
    if a == "rollback":
        return "POST", f"/admin/routes/{args.alias}/rollback", None
    if a == "rules":
        if args.rules_file is None:
            return "GET", f"/admin/routes/{args.alias}/rules", None
        return "PUT", f"/admin/routes/{args.alias}/rules", {"rules": read_rules(args.rules_file)}
    params = f"?limit={args.limit}" + (f"&alias={args.alias}" if args.alias else "")
    return "GET", f"/admin/routes/audit{params}", None


def read_rules(path: str) -> list:
    """The rules in a JSON file (or stdin for "-"); ValueError saying what is wrong with it."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        rules = json.loads(text)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(rules, list):
        raise ValueError(f"{path}: expected a JSON list of rules")
    return rules


def _show(data: dict) -> None:
    if data.get("object") == "route.rules":
        for rule in data["rules"]:
            print(json.dumps(rule))
        return
    rows = data.get("data") if data.get("object") == "list" else [data]
    for row in rows:
        if "weights" in row and "action" not in row:
            split = "  ".join(f"{v}={w}" for v, w in row["weights"].items())
            print(f"{row['alias']:<28} {split}  stable={row['stable']}  fallbacks={row['fallbacks']}")
        else:
            print(json.dumps(row))


def run(args: argparse.Namespace, settings: Settings | None = None, client: httpx.Client | None = None) -> int:
    settings = settings or Settings()
    try:
        method, path, body = _request(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # The audit log names the admin credential, not a login name the client could make up.
    resp = call(args, method, path, body=body, client=client, settings=settings)
    if resp is None:
        return 1
    _show(resp.json())
    return 0

"""The admin HTTP API from the command line: where the gateway is, and with which key."""
from __future__ import annotations

import argparse
import json
import sys

import httpx

from gateway.security.admin_key import admin_key_path, read_admin_key
from gateway.settings import Settings


def add_connection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="gateway base URL (default: http://<TOLLGATE_HOST>:<TOLLGATE_LISTEN_PORT>)")
    parser.add_argument("--admin-key", help="default: TOLLGATE_ADMIN_KEY, else <data_dir>/admin_key")


def resolve_admin_key(args: argparse.Namespace, settings: Settings) -> str:
    key = args.admin_key or read_admin_key(settings)
    if not key:
        raise SystemExit(f"no admin key: pass --admin-key, set TOLLGATE_ADMIN_KEY, or start the gateway "
                         f"once to create {admin_key_path(settings)}")
    return key


def call(args: argparse.Namespace, method: str, path: str, *, body: dict | None = None,
         params: dict | None = None, client: httpx.Client | None = None,
         settings: Settings | None = None, headers: dict[str, str] | None = None) -> httpx.Response | None:
    """The response, or None after printing why the gateway answered with an error."""
    settings = settings or Settings()
    headers = {**(headers or {}), "Authorization": f"Bearer {resolve_admin_key(args, settings)}"}
    http = client or httpx.Client(base_url=args.url or f"http://{settings.host}:{settings.port}", timeout=60)
    try:
        resp = http.request(method, path, json=body, params=params, headers=headers)
    except httpx.TransportError as e:
        print(f"error: cannot reach the gateway at {http.base_url}: {e}", file=sys.stderr)
        return None
    finally:
        if client is None:
            http.close()
    if resp.status_code >= 400:
        try:
            message = resp.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = resp.text
        print(f"error ({resp.status_code}): {message}", file=sys.stderr)
        return None
    return resp


def print_json(resp: httpx.Response | None) -> int:
    if resp is None:
        return 1
    print(json.dumps(resp.json(), indent=2))
    return 0

"""One hostile tenant under load beside a light one, against a running gateway: does anyone else notice?

Makes two tenants through the admin API (semantic cache off, so the engine answers every light request), then:

    before   the light tenant alone: 16-token chats (ignore_eos), one after another, for --seconds
    during   the same, while --concurrency hostile clients send the payloads of benchmarks/hostile_payloads.py
             (regexes like `(a{1000}){1000}`, each distinct; patterns and grammars of the same kind; four
             200,000-character stop strings; 128 deeply nested tools; n=1000; a 20,000-entry logit_bias; JSON
             nested 100,000 deep) and made-up API keys, round-robin, as fast as they are answered

Prints the hostile requests sent, how many were refused with a clear 4xx (an OpenAI-shaped error with a
message), completed (2xx) or failed otherwise (5xx, transport errors), per payload; and the light tenant's
p50/p99 before and during. Exits 1 when a hostile request got a 5xx or the light p99 more than doubled.

    make serve   # or any gateway; then, with its admin key:
    .venv/bin/python benchmarks/hostile.py --url http://127.0.0.1:8000 --admin-key "$(cat data/admin_key)"
"""
from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.hostile_payloads import LIGHT, PAYLOADS, body

MADE_UP_KEYS = "made_up_keys"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))] if ordered else float("nan")


async def make_tenant(http: httpx.AsyncClient, admin_key: str, name: str) -> str:
    admin = {"Authorization": f"Bearer {admin_key}"}
    r = await http.post("/admin/tenants", json={"name": name, "cache_enabled": False}, headers=admin)
    r.raise_for_status()
    r = await http.post(f"/admin/tenants/{r.json()['id']}/keys", json={}, headers=admin)
    r.raise_for_status()
    return r.json()["key"]


async def light_loop(http: httpx.AsyncClient, key: str, until: float) -> tuple[list[float], Counter]:
    latencies, statuses = [], Counter()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    while time.monotonic() < until:
        started = time.perf_counter()
        try:
            r = await http.post("/v1/chat/completions", content=LIGHT, headers=headers)
            statuses[r.status_code] += 1
            if r.status_code == 200:
                latencies.append(time.perf_counter() - started)
        except httpx.HTTPError as e:
            statuses[type(e).__name__] += 1
    return latencies, statuses


class Hostile:
    """Hostile clients cycling through the payloads; each request's outcome is tallied by payload."""

    def __init__(self, key: str, names: list[str]) -> None:
        self.key, self.names = key, names
        self.outcomes: dict[str, Counter] = defaultdict(Counter)  # payload -> outcome -> count
        self.seconds: dict[str, list[float]] = defaultdict(list)
        self._next = 0
        self._forwarded = f"198.51.100.{secrets.randbelow(200) + 1}"  # counted apart, if a trusted proxy relays

    def _request(self) -> tuple[str, bytes, dict]:
        i, self._next = self._next, self._next + 1
        name = self.names[i % len(self.names)]
        if name == MADE_UP_KEYS:
            return name, LIGHT.encode(), {"Authorization": "Bearer tg-" + secrets.token_urlsafe(32),
                                          "X-Forwarded-For": self._forwarded, "Content-Type": "application/json"}
        make, _, _ = PAYLOADS[name]
        return name, body(make(i)), {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}

    async def client(self, http: httpx.AsyncClient, until: float) -> None:
        while time.monotonic() < until:
            name, content, headers = self._request()
            started = time.perf_counter()
            try:
                r = await http.post("/v1/chat/completions", content=content, headers=headers)
                outcome = _outcome(r)
            except httpx.HTTPError as e:
                outcome = f"failed ({type(e).__name__})"
            self.outcomes[name][outcome] += 1
            self.seconds[name].append(time.perf_counter() - started)


def _outcome(r: httpx.Response) -> str:
    if 200 <= r.status_code < 300:
        return "completed"
    if 400 <= r.status_code < 500:
        try:
            clear = bool(r.json()["error"]["message"])
        except (ValueError, KeyError, TypeError):
            clear = False
        return "refused 4xx" if clear else f"unclear {r.status_code}"
    return f"failed {r.status_code}"


async def run(args: argparse.Namespace) -> int:
    names = args.payloads or [*PAYLOADS, MADE_UP_KEYS]
    limits = httpx.Limits(max_connections=args.concurrency + 4)
    async with httpx.AsyncClient(base_url=args.url, timeout=60, limits=limits) as http:
        tag = secrets.token_hex(3)
        light_key = args.light_key or await make_tenant(http, args.admin_key, f"hostile-bench-light-{tag}")
        hostile_key = args.hostile_key or await make_tenant(http, args.admin_key, f"hostile-bench-hostile-{tag}")
        await light_loop(http, light_key, time.monotonic() + 2)  # warm
        print(f"before: the light tenant alone for {args.seconds:g} s", file=sys.stderr)
        before, before_statuses = await light_loop(http, light_key, time.monotonic() + args.seconds)
        print(f"during: {args.concurrency} hostile clients beside it for {args.seconds:g} s", file=sys.stderr)
        hostile = Hostile(hostile_key, names)
        until = time.monotonic() + args.seconds
        (during, during_statuses), *_ = await asyncio.gather(
            light_loop(http, light_key, until), *(hostile.client(http, until) for _ in range(args.concurrency)))
    return report(hostile, before, during, before_statuses, during_statuses)


def report(hostile: Hostile, before: list[float], during: list[float], before_statuses: Counter,
           during_statuses: Counter) -> int:
    total = Counter()
    print(f"\n{'payload':<20} {'sent':>6} {'refused 4xx':>12} {'completed':>10} {'other':>6} {'p99 s':>7}")
    for name, outcomes in hostile.outcomes.items():
        total.update(outcomes)
        other = sum(n for o, n in outcomes.items() if o not in ("refused 4xx", "completed"))
        print(f"{name:<20} {sum(outcomes.values()):>6} {outcomes['refused 4xx']:>12} {outcomes['completed']:>10} "
              f"{other:>6} {percentile(hostile.seconds[name], 99):>7.3f}")
    other = {o: n for o, n in total.items() if o not in ("refused 4xx", "completed")}
    print(f"\nhostile requests sent: {sum(total.values())}; refused with a clear 4xx: {total['refused 4xx']}; "
          f"completed: {total['completed']}; other: {other or 0}")
    p99_before, p99_during = percentile(before, 99), percentile(during, 99)
    print(f"light tenant: {len(before)} answers before (p50 {statistics.median(before):.3f} s, "
          f"p99 {p99_before:.3f} s), {len(during)} during (p50 {statistics.median(during):.3f} s, "
          f"p99 {p99_during:.3f} s); "
          f"p99 during / before: {p99_during / p99_before:.2f}x")
    non_200 = {s: n for s, n in (before_statuses + during_statuses).items() if s != 200}
    if non_200:
        print(f"light tenant non-200 answers: {non_200}")
    failed = any(str(o).startswith("failed") for o in total) or non_200 or p99_during > 2 * p99_before
    print("FAIL" if failed else "OK: no 5xx, and the light tenant's p99 at most doubled")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--admin-key", default=os.environ.get("TOLLGATE_ADMIN_KEY", ""),
                        help="makes the two tenants (default: $TOLLGATE_ADMIN_KEY)")
    parser.add_argument("--light-key", help="use this tenant key for the light tenant instead of making one")
    parser.add_argument("--hostile-key", help="use this tenant key for the hostile tenant instead of making one")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase (default 20)")
    parser.add_argument("--concurrency", type=int, default=3, help="hostile clients at once (default 3)")
    parser.add_argument("--payloads", nargs="*", choices=[*PAYLOADS, MADE_UP_KEYS],
                        help="default: all of them, round-robin")
    args = parser.parse_args()
    if not args.admin_key and not (args.light_key and args.hostile_key):
        parser.error("give --admin-key (or $TOLLGATE_ADMIN_KEY), or both --light-key and --hostile-key")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())

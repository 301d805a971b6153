"""Routing rules on an alias of a cheap and a strong version: the share of a mixed workload each rule sends,
and the money saved against sending everything to the strong version (from the ledger).

The gateway runs for real (admission, the router, the ledger); the versions are the canned backend and the task
classifier embeds with a topic-word stand-in for MiniLM, so this measures the routing, not a model. A few seconds:

    .venv/bin/python benchmarks/routing_rules.py [--repeat 4]
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.gateway.routing.rules_scenario import CATALOGUE, RULES, run, workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=4, help="times the 16 request mixes are sent")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    asks = workload(args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        out = run(Path(tmp), asks)
        took = time.perf_counter() - started
    prices = {m: spec["price"] for m, spec in CATALOGUE["models"].items()}
    print(f"{len(asks)} requests in {took:.1f} s; prices per 1M tokens (in/out): "
          + ", ".join(f"{m} {p['input_per_million']}/{p['output_per_million']}" for m, p in prices.items()))
    print("rules, first match wins: " + "; ".join(f"{r['name']} {r['when']} -> {r['target']}" for r in RULES))
    print(f"{'rule':<16} {'share':>7}")
    for rule, share in out.shares().items():
        print(f"{rule:<16} {share:>7.2%}")
    print(f"task embeddings: {out.embeddings} of {len(asks)} requests")
    print(f"billed {out.cost} vs all-to-strong {out.all_strong}: saved {out.saved} "
          f"({out.saved / out.all_strong:.1%})")


if __name__ == "__main__":
    main()

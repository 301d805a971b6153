"""Autoscaling simulator: a synthetic week of traffic through a model of the replica pool, for each policy.

    .venv/bin/python benchmarks/autoscale_sim.py [--seed 0] [--out benchmarks/results/autoscale_week.png]

Traffic: Poisson arrivals every 10 s; weekdays' daytime plateau at --peak-rps, night 6-8.5x lower, weekends
2.2-2.7x lower, about 3 bursts a day of 1.5-2.5x for 5-30 minutes; prompts and outputs like the engine
benchmark's (34-39 and 16-256 tokens). A replica's speed comes from two measured engine figures (see
benchmarks/autoscale/replica.py), its start from benchmarks/scale_up.py.

Policies: fixed peak capacity; Ray Serve's reactive rule with the catalogue's settings as shipped; the same
rule at the largest target it can settle at that meets the SLO; that plus a warm pool; and that plus a
time-of-day forecast. Prints replica-hours, cost, SLO attainment (the share of 5-minute windows whose TTFT
p99 is within --ttft-slo), TTFT p99 over the week and cost per 1M tokens, then the catalogue `replicas:`
block of the cheapest policy that meets the SLO, and writes a chart.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.autoscale.autoscaler import SHIPPED, AutoscalerConfig  # noqa: E402
from benchmarks.autoscale.pool import StartTimes  # noqa: E402
from benchmarks.autoscale.replica import ReplicaModel  # noqa: E402
from benchmarks.autoscale.report import catalogue_block, chart, table  # noqa: E402
from benchmarks.autoscale.study import Setup, best, compare, peak_replicas, stable_target  # noqa: E402
from benchmarks.autoscale.traffic import TrafficConfig, generate  # noqa: E402


class _Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The docstring as written, and every flag's default."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=_Help)
    p.add_argument("--days", type=float, default=7.0, help="simulated days, from a Monday 00:00")
    p.add_argument("--tick-s", type=float, default=10.0, help="simulation step")
    p.add_argument("--seed", type=int, default=0, help="fixes the traffic, and so every figure")
    p.add_argument("--peak-rps", type=float, default=20.0, help="weekday daytime requests/s before bursts")
    p.add_argument("--replica-tok-s", type=float, default=412.6,
                   help="a replica's output tokens/s at a full batch: benchmarks/engine_throughput.py, 32 chat "
                        "requests at once on this 2-core machine, median of 3 runs "
                        "(docs/testing.md, Measured numbers)")
    p.add_argument("--full-batch", type=int, default=32, help="the batch --replica-tok-s was measured at")
    p.add_argument("--batch1-tok-s", type=float, default=66.5,
                   help="one request's decode tokens/s alone: same run of engine_throughput.py")
    p.add_argument("--prefill-tok-s", type=float, default=1300.0,
                   help="prompt tokens/s of a prefill: engine_throughput.py's TTFT of 28 ms for one of its "
                        "36.6-token chat prompts (docs/testing.md, 'engine, one request')")
    p.add_argument("--max-num-seqs", type=int, default=64,
                   help="a replica's batch limit (deploy/catalogue.yaml, smollm2-135m-instruct@fp32)")
    p.add_argument("--cold-start-s", type=float, default=24.0,
                   help="a new replica's load-to-first-answer: benchmarks/scale_up.py measured 12-24 s on "
                        "2 cores (docs/testing.md); the slow end")
    p.add_argument("--warm-start-s", type=float, default=0.38,
                   help="a standby replica's time to first answer: scale_up.py measured 0.30-0.38 s")
    p.add_argument("--price-per-replica-hour", type=float, default=0.08925,
                   help="USD; an assumption: a replica is the 2 vCPUs the engine figures were measured on, "
                        "priced as AWS c7i.large (2 vCPU, 4 GiB) on demand, Linux, us-east-1 list price")
    p.add_argument("--ttft-slo", type=float, default=2.0, help="TTFT p99 target, seconds")
    p.add_argument("--slo-target", type=float, default=0.99,
                   help="share of windows that must meet --ttft-slo for a policy to count as meeting it")
    p.add_argument("--window-s", type=float, default=300.0, help="the window a TTFT p99 is taken over")
    p.add_argument("--max-standby", type=int, default=4, help="largest warm pool the sweep tries")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "autoscale_week.png",
                   help="the chart (PNG)")
    return p.parse_args(argv)


def setup_from(args: argparse.Namespace) -> Setup:
    traffic_cfg = TrafficConfig(days=args.days, tick_s=args.tick_s, peak_rps=args.peak_rps)
    model = ReplicaModel(full_batch_tok_s=args.replica_tok_s, full_batch=args.full_batch,
                         batch1_tok_s=args.batch1_tok_s, prefill_tok_s=args.prefill_tok_s,
                         max_num_seqs=args.max_num_seqs)
    setup = Setup(traffic=generate(traffic_cfg, args.seed), mean_output_tokens=traffic_cfg.mean_output_tokens,
                  model=model, times=StartTimes(cold_s=args.cold_start_s, warm_s=args.warm_start_s),
                  shipped=AutoscalerConfig(), price_per_replica_hour=args.price_per_replica_hour,
                  ttft_slo_s=args.ttft_slo, slo_target=args.slo_target, window_s=args.window_s,
                  max_standby=args.max_standby)
    # The catalogue's max (2, for one 2-core box) would cap the pool far below this traffic: the autoscaler
    # may grow to the fixed-peak pool (enough for the week's peak), min and the rest as shipped.
    setup.shipped = AutoscalerConfig(min=SHIPPED.min, max=peak_replicas(setup, SHIPPED.target_ongoing_requests))
    return setup


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    setup = setup_from(args)
    traffic, model = setup.traffic, setup.model
    print(f"{args.days:g} days, {int(traffic.arrivals.sum()):,} requests, "
          f"{(traffic.prompt_tokens.sum() + traffic.output_tokens.sum()) / 1e6:,.0f}M tokens; peak "
          f"{traffic.rate.max():.1f} req/s; replica {model.throughput(1):.1f} tok/s at batch 1, "
          f"{model.throughput(args.full_batch):.1f} at {args.full_batch}, {model.throughput(args.max_num_seqs):.1f} "
          f"at {args.max_num_seqs}; cold start {args.cold_start_s:g} s, warm {args.warm_start_s:g} s; "
          f"${args.price_per_replica_hour:g}/replica-hour")
    print(f"Ray's rule can settle only for target_ongoing_requests <= {stable_target(model)} with this replica "
          f"(as shipped: {SHIPPED.target_ongoing_requests:g}); the tuned rows take the largest such target that "
          f"meets the SLO\n")
    outcomes = compare(setup)
    print(table(outcomes))
    chosen = best(setup, outcomes)
    print()
    print(catalogue_block(chosen, setup) if chosen else
          f"no policy met TTFT p99 <= {args.ttft_slo:g} s in {args.slo_target:.0%} of windows")
    chart(args.out, traffic, outcomes)
    print(f"\nchart: {args.out}  ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()

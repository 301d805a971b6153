"""Faults against real processes, under steady traffic: does the gateway lose nothing and hang on nothing?

Starts a throwaway Redis and PostgreSQL, migrates and prices it (`tollgate migrate`), starts the gateway as
`python -m gateway.cli serve` over a Ray Serve pool of SmolLM2 (one version, 2 replicas, a small KV cache) or
the in-process engine, makes two tenants through the admin API (one with generous limits, one with a small
monthly budget, to see clean 429s), and keeps N clients sending chat requests (streamed and not, max_tokens 16,
stream_options.include_usage). Then, one after another with steady traffic between:

    redis     SIGKILL, restarted empty after a while (limits fall back to in-process counting)
    postgres  immediate shutdown, started again (known keys keep working, ledger rows spool to disk)
    replica   ray.kill of one replica actor while streams run on it (Serve replaces it)
    gateway   SIGKILL of the gateway process right after a client saw an answer complete (the ledger's
              worst moment; --kill-at random for any moment), a new one started on the same data dir
    sigterm   SIGTERM of the gateway (a rolling restart): in-flight answers must finish, then a new one starts

Once traffic stops and the spool has drained, every request the client was told a usage for must have exactly
one ledger row with that request id and those tokens (see benchmarks/chaos_report.py for what LOST means), no
row may belong to a request no client saw, nothing may hang, and every 5xx must be one its fault explains.
Prints each figure beside its target and exits 1 if one is missed.

    .venv/bin/python benchmarks/chaos.py            # Ray pool, all five faults (~5 min on 2 cores)
    .venv/bin/python benchmarks/chaos.py --quick    # in-process engine, no replica fault, short phases (~2 min)
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.chaos_load import Load
from benchmarks.chaos_report import Phase, Row, figures, label, phase_lines, print_table, reconcile
from benchmarks.chaos_stack import (Admin, GatewayProcess, PoolShape, RayPool, gateway_env, migrate,
                                    ray_auth_env, wait_until, write_catalogue)
from tests.faults.servers import ThrowawayPostgres, ThrowawayRedis, free_port
from tests.gateway.support import usage_rows

def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def spooled_lines(data_dir: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in (data_dir / "spool").glob("segment-*.jsonl"))


class Chaos:
    """The stack, the traffic, and the faults, one after another."""

    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args, self.work = args, work
        self.data_dir = work / "data"
        self.redis = ThrowawayRedis()
        self.pg: ThrowawayPostgres | None = None
        self.pool: RayPool | None = None
        self.gateway: GatewayProcess | None = None
        self.load: Load | None = None
        self.phases: list[Phase] = []

    # -- the stack

    def up(self) -> None:
        a = self.args
        self.redis.start()
        self.pg = ThrowawayPostgres().start()
        catalogue = write_catalogue(self.work / "catalogue.yaml", PoolShape(
            replicas=a.replicas, max_num_seqs=a.max_num_seqs, num_kv_blocks=a.num_kv_blocks))
        address, auth = "", (ray_auth_env(self.work) if a.backend == "ray" else {})
        if a.backend == "ray":
            self.pool = RayPool(catalogue, self.work / "ray.log", num_cpus=a.ray_cpus, auth_env=auth)
            took = self.pool.start()
            address = self.pool.address
            log(f"Ray pool up at {address} in {took:.0f} s ({a.replicas} replicas)")
        env = gateway_env(database_url=self.pg.url, redis_url=self.redis.url, data_dir=self.data_dir,
                          catalogue=catalogue, backend=a.backend, port=free_port(), ray_address=address,
                          ray_auth=auth)
        migrate(env)
        self.gateway = GatewayProcess(env, self.work / "gateway.log")
        log(f"gateway ({a.backend}) ready in {self.gateway.start():.0f} s at {self.gateway.url}")

    def down(self) -> None:
        if self.gateway is not None:
            self.gateway.kill()
        if self.pool is not None:
            self.pool.stop()
        self.redis.close()
        if self.pg is not None:
            self.pg.close()

    # -- the faults: each returns its phase, closed once it has recovered

    def _phase(self, name: str, what: str, explains: set) -> Phase:
        phase = Phase(name, what, start=time.monotonic(), explains=frozenset(explains))
        self.phases.append(phase)
        log(f"fault: {what}")
        return phase

    def _recovered(self, phase: Phase) -> None:
        phase.notes["recovered_after_s"] = round(time.monotonic() - phase.start, 1)
        time.sleep(self.args.grace_s)
        phase.end = time.monotonic()
        log(f"{phase.name}: recovered after {phase.notes['recovered_after_s']} s")

    def fault_redis(self) -> Phase:
        p = self._phase("redis", f"Redis SIGKILL, restarted empty after {self.args.fault_s:g} s",
                        {(503, "limits_unavailable")})
        self.redis.stop()
        time.sleep(self.args.fault_s)
        self.redis.start()
        self._recovered(p)
        return p

    def fault_postgres(self) -> Phase:
        p = self._phase("postgres", f"PostgreSQL immediate stop, started after {self.args.fault_s:g} s",
                        {(503, "database_unavailable"), (503, "ledger_unavailable")})
        self.pg.stop()
        time.sleep(self.args.fault_s / 2)
        p.notes["spooled_rows_midway"] = spooled_lines(self.data_dir)
        time.sleep(self.args.fault_s / 2)
        self.pg.start()
        wait_until(lambda: (self.gateway.readyz() or {}).get("checks", {}).get("database"), timeout_s=60,
                   what="the gateway to see the database again")
        wait_until(lambda: spooled_lines(self.data_dir) == 0, timeout_s=60, what="the spool to drain")
        self._recovered(p)
        return p

    def fault_replica(self) -> Phase:
        p = self._phase("replica", "ray.kill of one replica actor mid-stream",
                        {(502, "generation_failed"), (503, "no_capacity")})
        reply = self.pool.kill_replica()
        if "error" in reply:
            raise RuntimeError(f"the replica was not replaced: {reply}")
        p.notes["noticed_after_s"], p.notes["replaced_after_s"] = reply["noticed_s"], reply["replaced_s"]
        self._recovered(p)
        return p

    def fault_gateway(self) -> Phase:
        at_completion = self.args.kill_at == "completion"
        when = "just after a client saw an answer complete" if at_completion else "at a random moment"
        p = self._phase("gateway", f"gateway SIGKILL {when}, a new process started on the same data dir",
                        {("transport", "cut"), ("transport", "reset"), ("transport", "connect")})
        if at_completion:
            # The worst moment for the ledger: the client has its answer, the row may still be in memory.
            self.load.completion.clear()
            self.load.completion.wait(30)
            seen = self.load.last_completed
            if seen is not None:
                p.notes["killed_after_completion_ms"] = round((time.monotonic() - seen.end) * 1000, 1)
                p.notes["that_request"] = seen.request_id
        self.gateway.kill()
        time.sleep(self.args.gateway_down_s)
        p.notes["restart_s"] = round(self.gateway.start(), 1)
        self._recovered(p)
        return p

    def fault_sigterm(self) -> Phase:
        """A rolling restart: in-flight answers must finish; only new connections may be turned away."""
        p = self._phase("sigterm", "gateway SIGTERM (graceful stop), a new process started on the same data dir",
                        {("transport", "reset"), ("transport", "connect"), (503, "no_capacity")})
        status, took = self.gateway.stop()
        p.notes["exit_status"], p.notes["stop_s"] = status, round(took, 1)
        time.sleep(self.args.gateway_down_s)
        p.notes["restart_s"] = round(self.gateway.start(), 1)
        self._recovered(p)
        return p

    def settled_rows(self, tenants: dict, timeout_s: float = 120) -> list[Row]:
        """The ledger once the spool is empty and no row has landed for 3 s (read while the gateway still runs:
        its final stop is not one of the faults)."""
        wait_until(lambda: spooled_lines(self.data_dir) == 0, timeout_s=timeout_s, what="the spool to drain")
        deadline, last, stable_since = time.monotonic() + timeout_s, -1, time.monotonic()
        while time.monotonic() < deadline:
            rows = [Row(r.request_id, r.tenant_id, r.prompt_tokens, r.completion_tokens, r.status)
                    for tenant_id, _ in tenants.values() for r in usage_rows(self.pg.url, tenant_id)]
            if len(rows) != last:
                last, stable_since = len(rows), time.monotonic()
            elif time.monotonic() - stable_since >= 3.0:
                return rows
            time.sleep(0.5)
        raise TimeoutError("the ledger kept changing")

    # -- the run

    def run(self) -> int:
        self.up()
        tenants = self._tenants()
        outcomes = self._traffic({label: key for label, (_, key) in tenants.items()})
        log(f"traffic stopped after {len(outcomes)} requests; waiting for the ledger")
        rows = self.settled_rows(tenants)
        status, _ = self.gateway.stop()
        if status not in (0, -15):  # uvicorn re-raises the SIGTERM it handled: -15 is a clean stop too
            log(f"note: the idle gateway's SIGTERM exit status was {status}")
        self._dump(outcomes, rows)
        return self._report(outcomes, rows, budget_tenant=tenants["budget"][0] if "budget" in tenants else None)

    def _tenants(self) -> dict[str, tuple[str, str]]:
        """label -> (tenant id, API key): one that no limit refuses, and one with a small monthly budget."""
        admin = Admin(self.gateway.url)
        try:
            tenants = {"main": admin.tenant("chaos-main", rpm=1_000_000, tpm=1_000_000_000,
                                            monthly_token_budget=10**12)}
            if self.args.budget_tokens:
                tenants["budget"] = admin.tenant("chaos-budget", monthly_token_budget=self.args.budget_tokens)
        finally:
            admin.close()
        return tenants

    def _traffic(self, keys: dict[str, str]):
        a = self.args
        self.load = Load(self.gateway.url, keys, clients=a.clients, max_tokens=a.max_tokens,
                         stream_share=a.stream_share).start()
        log(f"traffic: {a.clients} clients; baseline {a.between_s:g} s")
        time.sleep(a.between_s)
        for name in a.faults:
            FAULTS[name](self)
            time.sleep(a.between_s)
        self.load.stop()
        return self.load.snapshot()

    def _report(self, outcomes, rows: list[Row], *, budget_tenant: str | None) -> int:
        a = self.args
        budget_billed = None
        if budget_tenant is not None:
            budget_billed = sum(r.prompt_tokens + r.completion_tokens for r in rows if r.tenant_id == budget_tenant)
        rejected = self.data_dir / "spool" / "rejected.jsonl"
        rec = reconcile(outcomes, rows)
        table = figures(outcomes, self.phases, rec, budget=a.budget_tokens or None, budget_billed=budget_billed,
                        spool_left=spooled_lines(self.data_dir),
                        rejected=len(rejected.read_bytes().splitlines()) if rejected.exists() else 0)
        print(f"\nchaos: backend {a.backend}, {a.clients} clients, max_tokens {a.max_tokens}, "
              f"faults {', '.join(a.faults)} ({a.fault_s:g} s each, {a.between_s:g} s of steady traffic between)")
        print("\n".join(phase_lines(outcomes, self.phases)))
        print()
        print_table(table)
        self._explain_losses(outcomes, rec)
        missed = [f.what for f in table if f.ok is False]
        print(f"\n{'ALL TARGETS MET' if not missed else 'MISSED: ' + '; '.join(missed)}")
        return 1 if missed else 0

    def _explain_losses(self, outcomes, rec) -> None:
        """Where each lost or mismatched row's request sat against the faults."""
        by_id = {o.request_id: o for o in outcomes if o.request_id}

        def when(o) -> str:
            p = min(self.phases, key=lambda p: abs(o.end - p.start), default=None)
            return "no fault" if p is None else f"{(o.end - p.start) * 1000:+.0f} ms from the {p.name} fault's start"

        for rid in rec.lost:
            o = by_id[rid]
            print(f"  lost: {rid} ({o.tenant} tenant, {'stream' if o.stream else 'whole'}, "
                  f"{'complete' if o.completed else label(o)}, told {o.usage}, took {o.seconds:.2f} s; "
                  f"answered {when(o)})")
        for rid, told, billed in rec.mismatched:
            print(f"  mismatched: {rid} told {told}, billed {billed} ({when(by_id[rid])})")
        for r in rec.orphans:
            print(f"  orphan row: {r.request_id} ({r.prompt_tokens}+{r.completion_tokens} tokens, status {r.status})")

    def _dump(self, outcomes, rows) -> None:
        """Everything the figures come from, for a post-mortem (kept with --keep)."""
        t0 = self.phases[0].start if self.phases else 0.0
        with open(self.work / "outcomes.jsonl", "w") as f:
            for o in outcomes:
                times = {"t_start": round(o.start - t0, 3), "t_end": round(o.end - t0, 3)}
                f.write(json.dumps({**asdict(o), **times}) + "\n")
        with open(self.work / "rows.jsonl", "w") as f:
            for r in rows:
                f.write(json.dumps(asdict(r)) + "\n")
        (self.work / "phases.json").write_text(json.dumps(
            [{**asdict(p), "explains": sorted(map(str, p.explains)), "t_start": round(p.start - t0, 3),
              "t_end": round(p.end - t0, 3)} for p in self.phases], indent=1))


# The faults, in their default order.
FAULTS: dict[str, Callable[[Chaos], Phase]] = {
    "redis": Chaos.fault_redis,
    "postgres": Chaos.fault_postgres,
    "replica": Chaos.fault_replica,
    "gateway": Chaos.fault_gateway,
    "sigterm": Chaos.fault_sigterm,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="in-process engine, no replica fault, short phases (about 2 minutes)")
    p.add_argument("--backend", choices=("ray", "inprocess"))
    p.add_argument("--faults", help=f"comma-separated, in order (default: {','.join(FAULTS)}; "
                                    "'replica' only with the Ray backend)")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--stream-share", type=float, default=0.5)
    p.add_argument("--fault-s", type=float, help="how long Redis and PostgreSQL stay down (default 15, quick 6)")
    p.add_argument("--between-s", type=float, help="steady traffic before and between faults (default 10, quick 5)")
    p.add_argument("--grace-s", type=float, default=3.0, help="after recovery, errors still count as the fault's")
    p.add_argument("--gateway-down-s", type=float, default=1.0, help="how long the gateway stays dead")
    p.add_argument("--kill-at", choices=("completion", "random"), default="completion",
                   help="SIGKILL the gateway right after a client sees a complete answer (the ledger's worst "
                        "moment; default) or whenever the phase starts")
    p.add_argument("--budget-tokens", type=int, help="the budget tenant's monthly tokens (0: no such tenant)")
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--max-num-seqs", type=int, default=4)
    p.add_argument("--num-kv-blocks", type=int, default=64)
    p.add_argument("--ray-cpus", type=float, default=2)
    p.add_argument("--keep", action="store_true", help="keep the work dir (logs, spool) afterwards")
    a = p.parse_args(argv)
    a.backend = a.backend or ("inprocess" if a.quick else "ray")
    default_faults = [f for f in FAULTS if a.backend == "ray" or f != "replica"]
    a.faults = a.faults.split(",") if a.faults else default_faults
    if unknown := set(a.faults) - set(FAULTS):
        p.error(f"unknown faults {sorted(unknown)}")
    if "replica" in a.faults and a.backend != "ray":
        p.error("the replica fault needs --backend ray")
    a.fault_s = a.fault_s if a.fault_s is not None else (6.0 if a.quick else 15.0)
    a.between_s = a.between_s if a.between_s is not None else (5.0 if a.quick else 10.0)
    if a.budget_tokens is None:
        a.budget_tokens = 600 if a.quick else 2000
    return a


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tg-chaos-"))
    chaos = Chaos(args, work)
    try:
        return chaos.run()
    finally:
        chaos.down()
        if args.keep:
            log(f"work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

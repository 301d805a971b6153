"""Where the serving path's CPU goes, per output token: Tollgate as `make serve` runs it under the streamed-chat load
(benchmarks/chat_load.py), with each process's CPU time (utime + stime from /proc) read before and after the load
and divided by the tokens streamed, by role: the gateway (uvicorn), each model replica (a Ray Serve actor), and
Ray's own processes (raylet, GCS, the Serve controller, ...). A second pass records flame graphs of the gateway and
the busy replica with py-spy (native frames included), written as SVG.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_profile.py [--chats 64 --concurrency 16 --max-tokens 128] \
        [--svg-dir benchmarks/results/profile] [--label before]

The CPU pass runs without py-spy (sampling costs the sampled process time). Figures are per output token: the
replica's include the engine's forward passes, the gateway's are all serving overhead.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import chat_load  # noqa: E402
from benchmarks.servers import Tollgate, cpu_seconds  # noqa: E402


def replica_role(pid: int) -> str:
    """"replica fp32" etc. from the actor's process title (ray::ServeReplica:tg-<model>-<version>:VersionServer)."""
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "replica"
    app = title.split("ServeReplica:", 1)[-1].split(":", 1)[0]
    return "replica " + app.rsplit("-", 1)[-1]


def roles(server: Tollgate) -> dict[str, list[int]]:
    pids = server.pids()
    out = {"gateway": pids["gateway"], "ray daemons": pids["ray"]}
    for pid in pids["replica"]:
        out.setdefault(replica_role(pid), []).append(pid)
    return out


def cpu_pass(server: Tollgate, args) -> dict:
    by_role = roles(server)
    before = {pid: cpu_seconds(pid) for pids in by_role.values() for pid in pids}
    t0 = time.perf_counter()
    r = asyncio.run(chat_load.run(server.url, server.key, server.model, args.chats, args.concurrency,
                                  args.max_tokens))
    wall = time.perf_counter() - t0
    spent = {role: sum(cpu_seconds(p) - before[p] for p in pids) for role, pids in by_role.items()}
    tokens = r.output_tokens
    return {"output_tokens": tokens, "wall_s": wall, "output_tok_s": tokens / wall, "errors": r.errors,
            "cpu_s": spent, "cpu_us_per_token": {role: 1e6 * s / tokens for role, s in spent.items()},
            "cpu_share_of_wall": {role: s / wall for role, s in spent.items()}, **chat_load.summary(r)}


def flame_pass(server: Tollgate, args) -> list[Path]:
    by_role = roles(server)
    busy = max((p for role, pids in by_role.items() if role.startswith("replica") for p in pids),
               key=cpu_seconds, default=None)
    args.svg_dir.mkdir(parents=True, exist_ok=True)
    targets = {"gateway": by_role["gateway"][0]} | ({"replica": busy} if busy else {})
    svgs, procs = [], []
    for role, pid in targets.items():
        svg = args.svg_dir / f"{args.label}-{role}.{'svg' if args.format == 'flamegraph' else 'txt'}"
        procs.append(subprocess.Popen([str(ROOT / ".venv" / "bin" / "py-spy"), "record", "--native", "--pid", str(pid),
                                       "--rate", "50", "--duration", str(args.flame_seconds), "--output", str(svg),
                                       "--format", args.format], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        svgs.append(svg)
    # Keep the load on for as long as py-spy records.
    asyncio.run(chat_load.run(server.url, server.key, server.model, args.chats * 4, args.concurrency,
                              args.max_tokens))
    for p in procs:
        _, err = p.communicate(timeout=120)
        if p.returncode:
            print(f"py-spy: {err.decode()[-500:]}", file=sys.stderr)
    return svgs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chats", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--svg-dir", type=Path, default=ROOT / "benchmarks" / "results" / "profile")
    ap.add_argument("--label", default="now")
    ap.add_argument("--flame-seconds", type=int, default=30)
    ap.add_argument("--no-flame", action="store_true")
    ap.add_argument("--format", default="flamegraph", choices=["flamegraph", "raw"],
                    help="raw: collapsed stacks (text), to read or diff")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="for the started Tollgate")
    args = ap.parse_args()
    server = Tollgate(env=dict(kv.split("=", 1) for kv in args.env))
    server.start()
    try:
        asyncio.run(chat_load.run(server.url, server.key, server.model, 4, 4, 8, warmup=True))
        figures = cpu_pass(server, args)
        print(json.dumps({k: v for k, v in figures.items() if k != "error_samples"}, indent=1))
        print(f"\nCPU per output token ({figures['output_tokens']} tokens, {figures['output_tok_s']:.1f} tok/s):")
        for role, us in sorted(figures["cpu_us_per_token"].items(), key=lambda kv: -kv[1]):
            print(f"  {role:16s} {us:8.0f} us/token   {100 * figures['cpu_share_of_wall'][role]:5.1f}% of a core")
        if not args.no_flame:
            for svg in flame_pass(server, args):
                print(f"flame graph: {svg}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

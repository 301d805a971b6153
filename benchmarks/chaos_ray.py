"""The Ray side of benchmarks/chaos.py, in a process of its own: starts a local Ray cluster, deploys the
catalogue's versions on Serve (as a Ray head does in production, so gateways attach with
TOLLGATE_RAY_DEPLOY=false), prints {"address": ...}, then answers commands on stdin, one JSON line each:

    kill   ray.kill one replica actor of the (first) version; wait until Serve has replaced it
    stop   delete the applications and take the cluster down

    .venv/bin/python benchmarks/chaos_ray.py --catalogue CATALOGUE [--num-cpus 2]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray
from ray import serve

from gateway.catalogue import load_catalogue
from gateway.serving.pool import versions_from_catalogue
from workers.serve.app import app_name, deploy

REPLICA_PREFIX = "SERVE_REPLICA::"  # ray.serve._private.common.REPLICA_ID_FULL_ID_STR_PREFIX
SERVE_NAMESPACE = "serve"


def say(**fields) -> None:
    print(json.dumps(fields), flush=True)


def replica_names(app: str) -> list[str]:
    """The named replica actors of `app` that Ray still knows (its deployment is VersionServer)."""
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == SERVE_NAMESPACE and a["name"].startswith(f"{REPLICA_PREFIX}{app}#"))


def running(app: str) -> int:
    status = serve.status().applications.get(app)
    if status is None:
        return 0
    return sum(d.replica_states.get("RUNNING", 0) for d in status.deployments.values())


def kill_one(app: str, want: int, timeout_s: float = 240.0) -> dict:
    """ray.kill one replica (no restart: Serve's controller must notice and start a new one), then time how long
    until the version has `want` running replicas again, one of them new."""
    before = set(replica_names(app))
    victim = min(before)
    started = time.monotonic()
    ray.kill(ray.get_actor(victim, namespace=SERVE_NAMESPACE), no_restart=True)
    noticed_s = None
    while time.monotonic() - started < timeout_s:
        n, names = running(app), set(replica_names(app))
        if noticed_s is None and (n < want or names - before):
            noticed_s = time.monotonic() - started  # the controller has seen it die
        if names - before and victim not in names and n >= want:
            return {"killed": victim, "replicas_before": len(before), "noticed_s": round(noticed_s, 2),
                    "replaced_s": round(time.monotonic() - started, 2), "replicas_now": sorted(names)}
        time.sleep(0.2)
    return {"killed": victim, "replicas_before": len(before), "error": f"not replaced within {timeout_s:g}s",
            "replicas_now": replica_names(app)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--catalogue", required=True)
    p.add_argument("--num-cpus", type=float, default=2)
    args = p.parse_args()
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, namespace="tollgate", log_to_driver=False)
    configs = versions_from_catalogue(load_catalogue(args.catalogue), env={"OMP_NUM_THREADS": "1"})
    deploy(configs)
    first = configs[0]
    app = app_name(first.version)
    say(address=ray.get_runtime_context().gcs_address, versions=[c.version for c in configs],
        replicas=replica_names(app))
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "kill":
                say(**kill_one(app, first.floor))
            elif command == "stop":
                break
            elif command:
                say(error=f"unknown command {command!r}")
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()

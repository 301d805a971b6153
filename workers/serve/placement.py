"""How a local Ray pool's CPU replicas share the host they find: engine threads, OpenMP's wait policy and how many
replicas of a version can run at once. A gateway that starts its own Ray applies it (gateway/serving/ray_backend.py);
a pool on a cluster keeps its catalogue as written (other nodes, other sizes).

Measured on a 2-core box (benchmarks/serve_profile.py, 64 streamed chats, 16 at a time, 128 tokens each; the
README's "Serving" section has the table):

- A second replica of the same version only splits the same cores: 4 engine threads on 2 cores ran 148 tok/s
  against 193 for one replica. So a version gets at most `cores // threads` replicas here (at least its floor).
- OpenMP's threads spin at each barrier by default; on a host where the gateway, Ray and the replica share every
  core, a spinning thread takes the core the gateway needs and the step waits for whichever thread was preempted.
  `OMP_WAIT_POLICY=passive` (sleep at barriers) gave 258 tok/s against 233 spinning. Where the replicas leave a
  core free for the gateway, spinning costs nobody and is kept.
- A replica whose catalogue names no `num_threads` gets every core of the host (Ray would give it
  OMP_NUM_THREADS=1 from its num_cpus share): one thread served 170 tok/s offline against 300 for two.
- Ray starts its workers at nice 15, so every nice-0 process on the host (the gateway, a client, a sidecar)
  preempts the engine's threads whenever it wakes. Per-thread scheduler statistics under that load: each engine
  thread waited runnable 18-25 % of the time with 10-13 % of the host idle; at nice 0, 15-16 % with 7 % idle, and
  317 / 301 tok/s against 266 / 292 (alternated). A Ray of the gateway's own starts its workers at nice 0
  (`local_ray_system_config`); the replicas are what the host is for.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from workers.serve.config import VersionServeConfig


def local_ray_system_config() -> dict[str, object]:
    """Ray's own settings for a local Ray that a gateway starts for its pool (ray.init's _system_config). A fresh
    dict each call: ray.init adds its own keys to the one it is given."""
    return {"worker_niceness": 0}


@dataclass(frozen=True, slots=True)
class Host:
    cores: int  # the CPUs this process may run on

    @classmethod
    def local(cls, limit: float | None = None) -> Host:
        """This process's CPUs, or fewer when Ray is started with fewer (`limit`, its num_cpus)."""
        cores = len(os.sched_getaffinity(0))
        return cls(max(1, min(cores, int(limit))) if limit else cores)


@dataclass(frozen=True, slots=True)
class Placement:
    config: VersionServeConfig
    reasons: tuple[str, ...]  # what was changed from the catalogue, and why (logged at start)


def threads_of(cfg: VersionServeConfig, host: Host) -> int:
    threads = cfg.engine.get("num_threads")
    return host.cores if threads is None else max(1, int(threads))


def place(cfg: VersionServeConfig, host: Host) -> Placement:
    """`cfg` fitted to `host`; GPU replicas are left as they are (their threads only feed the device)."""
    if cfg.num_gpus or cfg.engine.get("device", "cpu") != "cpu":
        return Placement(cfg, ())
    reasons = []
    engine, env = dict(cfg.engine), dict(cfg.env)
    threads = threads_of(cfg, host)
    if "num_threads" not in engine:
        engine["num_threads"] = threads
        reasons.append(f"num_threads={threads} (every core of {host.cores})")
    fit = max(1, host.cores // threads)
    max_replicas = cfg.max_replicas
    if max_replicas > fit:
        max_replicas = max(cfg.min_replicas, fit)
        reasons.append(f"max_replicas {cfg.max_replicas} -> {max_replicas} ({threads} threads each on {host.cores} "
                       "cores: more would only split them)")
    if "OMP_WAIT_POLICY" not in env and threads >= host.cores - 1:
        env["OMP_WAIT_POLICY"] = "passive"
        reasons.append("OMP_WAIT_POLICY=passive (the engine shares every core with the gateway)")
    if not reasons:
        return Placement(cfg, ())
    return Placement(dataclasses.replace(cfg, engine=engine, env=env, max_replicas=max_replicas), tuple(reasons))

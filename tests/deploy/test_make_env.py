"""deploy/scripts/make-env.sh: random secrets for docker compose, mode 0600, never overwritten."""
from __future__ import annotations

import stat
import subprocess

NAMES = ("POSTGRES_PASSWORD", "TOLLGATE_ADMIN_KEY", "TOLLGATE_METRICS_TOKEN")


def make_env(root, path) -> dict[str, str]:
    subprocess.run(["bash", str(root / "deploy" / "scripts" / "make-env.sh"), str(path)], check=True,
                   capture_output=True, text=True)
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line)


def test_writes_long_random_secrets_with_mode_0600(root, tmp_path):
    env = make_env(root, tmp_path / ".env")
    assert set(env) == set(NAMES)
    assert all(len(v) >= 32 for v in env.values())  # the gateway refuses shorter keys
    assert env["TOLLGATE_ADMIN_KEY"].startswith("tga-") and env["TOLLGATE_METRICS_TOKEN"].startswith("tgm-")
    assert env["POSTGRES_PASSWORD"].isalnum()  # safe inside DATABASE_URL
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
    assert make_env(root, tmp_path / "other.env") != env  # random, not a default


def test_keeps_what_is_there_and_fills_what_is_missing(root, tmp_path):
    path = tmp_path / ".env"
    path.write_text("POSTGRES_PASSWORD=mine\nRAY_NUM_CPUS=2")  # no final newline
    path.chmod(0o644)
    env = make_env(root, path)
    assert env["POSTGRES_PASSWORD"] == "mine" and env["RAY_NUM_CPUS"] == "2"
    assert set(NAMES) <= set(env)
    assert make_env(root, path) == env  # a second run changes nothing
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_is_executable_bash(root):
    path = root / "deploy" / "scripts" / "make-env.sh"
    assert path.stat().st_mode & stat.S_IXUSR
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0

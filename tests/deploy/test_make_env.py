"""deploy/scripts/make-env.sh: random secrets for docker compose, mode 0600, never overwritten, and the secret files
compose mounts, written from them."""
from __future__ import annotations

import stat
import subprocess

NAMES = ("POSTGRES_PASSWORD", "TOLLGATE_ADMIN_KEY", "TOLLGATE_METRICS_TOKEN")
SETTINGS = ("TOLLGATE_PORT", "TOLLGATE_SECRETS_DIR")


def make_env(root, path) -> dict[str, str]:
    subprocess.run(["bash", str(root / "deploy" / "scripts" / "make-env.sh"), str(path)], check=True,
                   capture_output=True, text=True)
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line)


def test_writes_long_random_secrets_with_mode_0600(root, tmp_path):
    env = make_env(root, tmp_path / ".env")
    assert set(env) == {*NAMES, *SETTINGS}
    assert env["TOLLGATE_PORT"] == "8000" and env["TOLLGATE_SECRETS_DIR"] == str(tmp_path / "secrets")
    assert all(len(env[name]) >= 32 for name in NAMES)  # the gateway refuses shorter keys
    assert env["TOLLGATE_ADMIN_KEY"].startswith("tga-") and env["TOLLGATE_METRICS_TOKEN"].startswith("tgm-")
    assert env["POSTGRES_PASSWORD"].isalnum()  # safe inside DATABASE_URL
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
    assert make_env(root, tmp_path / "other" / ".env") != env  # random, not a default


def test_secret_files_hold_the_env_files_values(root, tmp_path):
    env = make_env(root, tmp_path / ".env")
    secrets = tmp_path / "secrets"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700  # the folder keeps other host users out
    read = {p.name: p.read_text() for p in secrets.iterdir()}
    assert read == {"postgres_password": env["POSTGRES_PASSWORD"] + "\n",
                    "admin_key": env["TOLLGATE_ADMIN_KEY"] + "\n",
                    "metrics_token": env["TOLLGATE_METRICS_TOKEN"] + "\n",
                    "database_url": f"postgresql://tollgate:{env['POSTGRES_PASSWORD']}@postgres:5432/tollgate\n"}
    # The containers' unprivileged users read their bind-mounted copies.
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in secrets.iterdir())
    # A changed value in the env file reaches the secret file on the next run.
    path = tmp_path / ".env"
    path.write_text(path.read_text().replace(env["TOLLGATE_ADMIN_KEY"], "tga-" + "b" * 40))
    make_env(root, path)
    assert (secrets / "admin_key").read_text() == "tga-" + "b" * 40 + "\n"


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

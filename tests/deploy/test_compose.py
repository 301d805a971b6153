from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

SERVICES = {"postgres", "redis", "migrate", "ray-head", "ray-worker", "gateway"}
LONG_RUNNING = {"postgres", "redis", "ray-head", "ray-worker", "gateway"}
SECRETS = ("POSTGRES_PASSWORD", "TOLLGATE_ADMIN_KEY", "TOLLGATE_METRICS_TOKEN")


def check_stack(doc: dict) -> None:
    services = doc["services"]
    assert set(services) == SERVICES
    for name in LONG_RUNNING:
        assert "test" in services[name]["healthcheck"], f"{name}: no health check"
    migrate = services["migrate"]
    assert migrate["command"] == ["tollgate", "migrate"] and migrate["restart"] == "no"
    deps = services["gateway"]["depends_on"]
    assert deps["migrate"]["condition"] == "service_completed_successfully"
    assert deps["ray-head"]["condition"] == deps["redis"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["ray-worker"]["profiles"] == ["extra-worker"]
    env = services["gateway"]["environment"]
    assert env["TOLLGATE_BACKEND"] == "ray" and env["RAY_HEAD_ADDRESS"] == "ray-head:6379"
    assert env["REDIS_URL"].startswith("redis://")
    assert {"pgdata", "redisdata", "gatewaydata"} <= set(doc["volumes"])
    # The Ray dashboard runs jobs for whoever reaches it: this host only.
    assert [str(p).split(":")[0] for p in services["ray-head"]["ports"]] == ["127.0.0.1"]


def secret_names(service: dict) -> set[str]:
    return {s if isinstance(s, str) else s["source"] for s in service.get("secrets", [])}


def test_secrets_are_files_never_environment(root):
    """No secret (nor a URL carrying the database password) in any container's environment: compose mounts them
    under /run/secrets, the settings read NAME_FILE, and compose refuses to start before make-env.sh has run."""
    text = (root / "docker-compose.yml").read_text()
    doc = yaml.safe_load(text)
    for name, service in doc["services"].items():
        env = service.get("environment", {})
        for var, value in env.items():
            assert var not in (*SECRETS, "DATABASE_URL"), f"{name}: {var} in its environment"
            assert "postgresql://" not in str(value) and "PASSWORD" not in str(value), f"{name}: {var}={value}"
        for var, value in env.items():
            if var.endswith("_FILE"):
                assert value.startswith("/run/secrets/") and value.rsplit("/", 1)[1] in secret_names(service)
    gateway = doc["services"]["gateway"]
    assert {"admin_key", "metrics_token", "database_url"} <= secret_names(gateway)
    assert gateway["environment"]["TOLLGATE_ADMIN_KEY_FILE"] == "/run/secrets/admin_key"
    assert "postgres_password" in secret_names(doc["services"]["postgres"])
    for secret in doc["secrets"].values():
        assert secret["file"].startswith("${TOLLGATE_SECRETS_DIR:?run deploy/scripts/make-env.sh}/")
    assert ".env" in (root / ".gitignore").read_text().split()
    assert "/secrets/" in (root / ".gitignore").read_text().split()


def test_no_obsolete_keys_and_worker_checks_itself(root):
    doc = yaml.safe_load((root / "docker-compose.yml").read_text())
    assert "version" not in doc
    worker_check = " ".join(doc["services"]["ray-worker"]["healthcheck"]["test"])
    assert "ray-head" not in worker_check and "127.0.0.1" in worker_check


def test_published_port_is_not_the_gateways_own_setting(root, monkeypatch):
    """TOLLGATE_PORT (.env) is the host port compose publishes; the gateway's settings never read it."""
    from gateway.settings import Settings

    doc = yaml.safe_load((root / "docker-compose.yml").read_text())
    assert doc["services"]["gateway"]["ports"] == ["${TOLLGATE_PORT:-8000}:8000"]
    monkeypatch.setenv("TOLLGATE_PORT", "18123")
    monkeypatch.delenv("TOLLGATE_LISTEN_PORT", raising=False)
    assert Settings().port == 8000
    monkeypatch.setenv("TOLLGATE_LISTEN_PORT", "8001")
    assert Settings().port == 8001


def test_compose_file_structure(root):
    check_stack(yaml.safe_load((root / "docker-compose.yml").read_text()))


# CI installs docker-compose (deploy/scripts/ensure-services.sh), so there the check always runs;
# elsewhere a machine without the binary skips it.
@pytest.mark.skipif(shutil.which("docker-compose") is None and not os.environ.get("CI"),
                    reason="docker-compose binary not installed")
def test_docker_compose_config(root, tmp_path):
    env_file = tmp_path / ".env"
    subprocess.run(["bash", str(root / "deploy" / "scripts" / "make-env.sh"), str(env_file)], check=True,
                   capture_output=True)
    out = compose_config(root, env_file)
    assert out.returncode == 0, out.stderr
    resolved = yaml.safe_load(out.stdout)  # the file as compose resolved it (anchors, defaults)
    check_stack(resolved)
    values = [line.split("=", 1)[1] for line in env_file.read_text().splitlines() if line.split("=")[0] in SECRETS]
    assert len(values) == 3 and not any(v in out.stdout for v in values)
    assert resolved["secrets"]["admin_key"]["file"] == str(tmp_path / "secrets" / "admin_key")


@pytest.mark.skipif(shutil.which("docker-compose") is None and not os.environ.get("CI"),
                    reason="docker-compose binary not installed")
def test_docker_compose_refuses_to_run_without_the_env_file(root, tmp_path):
    (tmp_path / ".env").write_text("")
    out = compose_config(root, tmp_path / ".env")
    assert out.returncode != 0 and "run deploy/scripts/make-env.sh" in out.stderr


def compose_config(root, env_file) -> subprocess.CompletedProcess:
    """`docker-compose config` with only `env_file` (and none of this process's settings) for variables."""
    env = {k: v for k, v in os.environ.items() if k not in {*SECRETS, "TOLLGATE_SECRETS_DIR", "TOLLGATE_PORT"}}
    return subprocess.run(["docker-compose", "-f", "docker-compose.yml", "--env-file", str(env_file),
                           "--profile", "extra-worker", "config"],
                          cwd=root, capture_output=True, text=True, timeout=60, env=env)

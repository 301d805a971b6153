from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

SERVICES = {"postgres", "redis", "migrate", "ray-head", "ray-worker", "gateway"}
LONG_RUNNING = {"postgres", "redis", "ray-head", "ray-worker", "gateway"}


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
    assert env["DATABASE_URL"].startswith("postgresql://") and env["REDIS_URL"].startswith("redis://")
    assert {"pgdata", "redisdata", "gatewaydata"} <= set(doc["volumes"])
    # The Ray dashboard runs jobs for whoever reaches it: this host only.
    assert [str(p) for p in services["ray-head"]["ports"]] in (["127.0.0.1:8265:8265"], ["127.0.0.1:8265:8265/tcp"])
    assert "TOLLGATE_METRICS_TOKEN" in env and "TOLLGATE_ADMIN_KEY" in env


def test_no_default_passwords(root):
    """Secrets come from .env (deploy/scripts/make-env.sh) or the environment, never a default."""
    text = (root / "docker-compose.yml").read_text()
    for name in ("POSTGRES_PASSWORD", "TOLLGATE_ADMIN_KEY", "TOLLGATE_METRICS_TOKEN"):
        assert f"${{{name}:?run deploy/scripts/make-env.sh}}" in text
        assert f"${{{name}:-" not in text
    assert ".env" in (root / ".gitignore").read_text().split()


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
    check_stack(yaml.safe_load(out.stdout))  # the file as compose resolved it (anchors, defaults)


@pytest.mark.skipif(shutil.which("docker-compose") is None and not os.environ.get("CI"),
                    reason="docker-compose binary not installed")
def test_docker_compose_refuses_to_run_without_the_env_file(root, tmp_path):
    (tmp_path / ".env").write_text("")
    out = compose_config(root, tmp_path / ".env")
    assert out.returncode != 0 and "run deploy/scripts/make-env.sh" in out.stderr


def compose_config(root, env_file) -> subprocess.CompletedProcess:
    """`docker-compose config` with only `env_file` (and none of this process's secrets) for variables."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"POSTGRES_PASSWORD", "TOLLGATE_ADMIN_KEY", "TOLLGATE_METRICS_TOKEN"}}
    return subprocess.run(["docker-compose", "-f", "docker-compose.yml", "--env-file", str(env_file),
                           "--profile", "extra-worker", "config"],
                          cwd=root, capture_output=True, text=True, timeout=60, env=env)

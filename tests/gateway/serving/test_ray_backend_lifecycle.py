"""RayServeBackend's start and stop against a stubbed Ray: a gateway that joined a cluster by address leaves the
cluster's Serve pool alone when it stops (benchmarks/chaos.py found every gateway stop deleting the pool the Ray
head had deployed); one that started its own local Ray takes it down."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("ray")

from gateway.serving import ray_backend
from gateway.settings import Settings


class StubRay:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.initialized = False
        self.system_config: dict | None = None

    # ray
    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **kw) -> None:
        self.calls.append(f"init address={kw.get('address')}")
        self.initialized = True
        self.system_config = kw.get("_system_config")

    def shutdown(self) -> None:
        self.calls.append("ray.shutdown")

    # ray.serve
    def get_app_handle(self, name: str):
        async def info():
            return {"max_model_len": 2048, "kv_capacity_tokens": 1024, "block_size": 16}
        return SimpleNamespace(info=SimpleNamespace(remote=info))

    def status(self):
        return SimpleNamespace(applications={})

    def serve_shutdown(self) -> None:
        self.calls.append("serve.shutdown")


@pytest.fixture
def stub(monkeypatch) -> StubRay:
    s = StubRay()
    monkeypatch.setattr(ray_backend, "ray", SimpleNamespace(is_initialized=s.is_initialized, init=s.init,
                                                           shutdown=s.shutdown))
    monkeypatch.setattr(ray_backend, "serve", SimpleNamespace(get_app_handle=s.get_app_handle, status=s.status,
                                                             shutdown=s.serve_shutdown))
    monkeypatch.setattr(ray_backend, "load_tokenizer", lambda weights: object())
    monkeypatch.setattr(ray_backend, "deploy", lambda configs: {c.version: s.get_app_handle(c.version)
                                                                for c in configs})
    return s


@pytest.mark.parametrize("address", ["127.0.0.1:6379", "auto"])
async def test_a_gateway_that_joined_a_cluster_leaves_its_pool_running(stub, gw_catalogue, address):
    backend = ray_backend.RayServeBackend(Settings(RAY_ADDRESS=address, ray_deploy=False), gw_catalogue)
    await backend.start()
    await backend.stop()
    assert stub.calls == [f"init address={address}"]
    assert stub.system_config is None  # a cluster's workers are as its operator started them


async def test_a_gateway_that_started_its_own_ray_takes_it_down(stub, gw_catalogue):
    backend = ray_backend.RayServeBackend(Settings(RAY_ADDRESS=""), gw_catalogue)
    await backend.start()
    await backend.stop()
    assert stub.calls == ["init address=None", "serve.shutdown", "ray.shutdown"]
    assert stub.system_config == {"worker_niceness": 0}  # the replicas are not preempted by every nice-0 process


async def test_replica_counts_for_economics_come_from_serve_status(stub, gw_catalogue, monkeypatch):
    """RUNNING replicas per version (standby ones are replicas of the same deployment); gateways attached to one
    cluster name the same pool, so their replica-minutes collide instead of adding."""
    from gateway.economics.recorder import ReplicaSource
    from workers.serve.app import app_name

    fp32, bf16 = "smollm2-135m-instruct@fp32", "smollm2-135m-instruct@bf16"
    deployment = SimpleNamespace(replica_states={"RUNNING": 3, "STARTING": 1})
    status = SimpleNamespace(applications={app_name(fp32): SimpleNamespace(deployments={"VersionServer": deployment})})
    monkeypatch.setattr(ray_backend.serve, "status", lambda: status)
    joined = ray_backend.RayServeBackend(Settings(RAY_ADDRESS="10.0.0.1:6379", ray_deploy=False), gw_catalogue)
    await joined.start()
    try:
        assert isinstance(joined, ReplicaSource)
        assert joined.replica_counts() == {fp32: 3, bf16: 0}
        assert joined.replica_pool == "ray:10.0.0.1:6379/tollgate"
    finally:
        await joined.stop()
    local = ray_backend.RayServeBackend(Settings(RAY_ADDRESS=""), gw_catalogue)
    assert local.replica_pool.startswith("ray-local:")  # its own Ray: nobody else's replicas

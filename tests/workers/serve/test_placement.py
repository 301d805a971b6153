"""Fitting a local pool's CPU replicas to the host (workers/serve/placement.py)."""
from __future__ import annotations

from workers.serve.config import VersionServeConfig
from workers.serve.placement import Host, place


def cfg(**kw) -> VersionServeConfig:
    engine = {"model": "smollm2-135m-instruct", "device": "cpu", **kw.pop("engine", {})}
    return VersionServeConfig(version="m@fp32", engine=engine, **kw)


def test_two_cores_one_replica_of_two_threads_that_wait_passively():
    placed = place(cfg(engine={"num_threads": 2}, min_replicas=1, max_replicas=2), Host(2))
    assert placed.config.max_replicas == 1
    assert placed.config.env["OMP_WAIT_POLICY"] == "passive"
    assert placed.config.engine["num_threads"] == 2
    assert any("max_replicas 2 -> 1" in r for r in placed.reasons)


def test_a_replica_without_threads_gets_every_core():
    placed = place(cfg(max_replicas=1), Host(2))
    assert placed.config.engine["num_threads"] == 2


def test_cores_to_spare_keep_spinning_and_the_replicas_that_fit():
    placed = place(cfg(engine={"num_threads": 2}, min_replicas=1, max_replicas=4), Host(8))
    assert placed.config.max_replicas == 4 and "OMP_WAIT_POLICY" not in placed.config.env
    placed = place(cfg(engine={"num_threads": 4}, min_replicas=1, max_replicas=4), Host(8))
    assert placed.config.max_replicas == 2


def test_the_floor_is_kept_and_the_catalogue_env_wins():
    placed = place(cfg(engine={"num_threads": 2}, min_replicas=2, max_replicas=3,
                       env={"OMP_WAIT_POLICY": "active"}), Host(2))
    assert placed.config.max_replicas == 2  # never below the warm floor
    assert placed.config.env["OMP_WAIT_POLICY"] == "active"


def test_gpu_replicas_are_left_as_written():
    original = cfg(engine={"device": "cuda"}, num_gpus=1, max_replicas=4)
    placed = place(original, Host(2))
    assert placed.config is original and placed.reasons == ()


def test_a_ray_given_fewer_cpus_places_on_those():
    assert Host.local(1).cores == 1
    assert Host.local(None).cores >= 1

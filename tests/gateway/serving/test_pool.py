"""The catalogue's versions as Serve applications (gateway/serving/pool.py, workers/serve/app.py)."""
from __future__ import annotations

from gateway.catalogue import load_catalogue
from gateway.serving.pool import versions_from_catalogue
from gateway.settings import Settings
from workers.serve.app import PREFIX_ROUTER, app_name, build_app


def test_configs_follow_the_catalogue_with_overrides():
    cat = load_catalogue(Settings().catalogue)
    configs = {c.version: c for c in versions_from_catalogue(cat, engine_overrides={"num_kv_blocks": 8},
                                                             num_cpus=0.25)}
    assert set(configs) == set(cat.version_names())
    fp32 = configs["smollm2-135m-instruct@fp32"]
    assert fp32.engine == {"model": "smollm2-135m-instruct", "device": "cpu", "dtype": "float32", "block_size": 16,
                           "max_num_seqs": 64, "num_threads": 2, "num_kv_blocks": 8}
    assert (fp32.min_replicas, fp32.max_replicas, fp32.num_cpus) == (1, 2, 0.25)  # override wins
    assert fp32.max_ongoing_requests == 64  # a replica takes what its engine can batch


def test_app_names_are_serve_safe():
    assert app_name("smollm2-135m-instruct@fp32") == "tg-smollm2-135m-instruct-fp32"


def test_build_app_applies_autoscaling_and_the_prefix_router():
    cat = load_catalogue(Settings().catalogue)
    [cfg] = versions_from_catalogue(cat, versions=["smollm2-135m-instruct@bf16"], standby=1, prefix_routing=True)
    deployment = build_app(cfg)._bound_deployment
    auto = deployment._deployment_config.autoscaling_config
    assert (auto.min_replicas, auto.max_replicas) == (2, 2)
    router = deployment._deployment_config.request_router_config.request_router_class
    assert router == PREFIX_ROUTER


def test_gpu_catalogue_versions_ask_ray_for_a_gpu_and_run_on_cuda():
    from pathlib import Path

    cat = load_catalogue(Path(Settings().catalogue).with_name("catalogue.gpu.yaml"))
    configs = {c.version: c for c in versions_from_catalogue(cat)}
    gpu = configs["smollm2-135m-instruct@gpu-bf16"]
    assert gpu.engine["device"] == "cuda" and gpu.num_gpus == 1
    options = build_app(gpu)._bound_deployment.ray_actor_options
    assert options["num_gpus"] == 1 and options["num_cpus"] == 2
    assert "num_gpus" not in build_app(configs["smollm2-135m-instruct@cpu-fp32"])._bound_deployment.ray_actor_options
    assert configs["smollm2-135m-instruct@gpu-int4"].engine["quantization"] == "int4"


def test_a_cuda_engine_without_a_gpu_replica_is_refused():
    import pytest

    from gateway.catalogue import CatalogueError, parse_catalogue

    raw = {"models": {"m": {"weights": "w", "price": {"input_per_million": 1},
                            "versions": {"v": {"engine": {"device": "cuda"}, "replicas": {"num_cpus": 1}}}}}}
    with pytest.raises(CatalogueError, match="num_gpus"):
        parse_catalogue(raw)


def test_upstream_versions_are_not_deployed_nor_loaded():
    from gateway.catalogue import parse_catalogue
    from gateway.serving.inprocess import InProcessBackend

    raw = {"upstreams": {"api": {"protocol": "openai", "base_url": "http://127.0.0.1:9/v1"}},
           "models": {"m": {"weights": "smollm2-135m-instruct", "price": {"input_per_million": 1},
                            "versions": {"local": {}, "api": {"upstream": "api", "model": "x"}}}}}
    cat = parse_catalogue(raw)
    assert [c.version for c in versions_from_catalogue(cat)] == ["m@local"]
    assert list(InProcessBackend(cat)._configs) == ["m@local"]  # nothing loads until start()

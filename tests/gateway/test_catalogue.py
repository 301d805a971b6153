from __future__ import annotations

import copy

import pytest

from gateway.catalogue import CatalogueError, load_catalogue, parse_catalogue
from gateway.settings import Settings

BASE = {
    "models": {"m": {"weights": "smollm2-135m-instruct", "price": {"input_per_million": 1},
                     "versions": {"a": {}, "b": {"replicas": {"min": 0, "max": 2, "standby": 1}}}}},
    "aliases": {"chat": {"weights": {"m@a": 90, "m@b": 10}, "fallbacks": ["m"]}},
}


def bad(path: list, value) -> dict:
    raw = copy.deepcopy(BASE)
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


def test_shipped_catalogue_loads():
    cat = load_catalogue(Settings().catalogue)
    assert "chat" in cat.alias_specs() and "smollm2-135m-instruct" in cat.alias_specs()


def test_model_names_are_implicit_aliases():
    specs = parse_catalogue(BASE).alias_specs()
    assert specs["m"].weights == {"m@a": 100}
    assert specs["chat"].stable_version == "m@a"


@pytest.mark.parametrize("path,value,field", [
    (["models", "m", "versions", "b", "replicas", "min"], -1, "replicas.min"),
    (["models", "m", "versions", "b", "replicas", "max"], 0, "replicas.max"),
    (["models", "m", "versions", "b", "replicas", "standby"], -2, "replicas.standby"),
    (["aliases", "chat", "weights"], {"m@a": 95, "m@b": 10}, "aliases.chat.weights"),
    (["aliases", "chat", "weights"], {"m@a": 90, "m@zz": 10}, "aliases.chat.weights"),
    (["aliases", "chat", "fallbacks"], ["nowhere"], "aliases.chat.fallbacks"),
    (["aliases", "chat", "stable"], "m@zz", "aliases.chat"),
    (["models", "m", "versions"], {}, "models.m.versions"),
])
def test_bad_catalogues_name_the_field(path, value, field):
    with pytest.raises(CatalogueError) as e:
        parse_catalogue(bad(path, value))
    assert field in str(e.value)


def test_unparseable_catalogue(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("models: {m: [unclosed")
    with pytest.raises(CatalogueError) as e:
        load_catalogue(p)
    assert str(p) in str(e.value)


UPSTREAMS = {
    "upstreams": {"local-vllm": {"protocol": "openai", "base_url": "http://127.0.0.1:8000/v1/"}},
    "models": {**BASE["models"],
               "api": {"price": {"input_per_million": 2, "output_per_million": 4},
                       "versions": {"v1": {"upstream": "local-vllm", "model": "Qwen/Qwen2.5-7B-Instruct",
                                           "cost": {"input_per_million": 0.5, "output_per_million": 1}}}}},
    "aliases": {"burst": {"weights": {"m@a": 100}, "fallbacks": ["api@v1"]}},
}


def test_upstream_versions_join_the_catalogue_without_weights():
    cat = parse_catalogue(UPSTREAMS)
    assert cat.upstream_version_names() == ["api@v1"]
    assert cat.pool_version_names() == ["m@a", "m@b"]
    assert cat.upstreams["local-vllm"].base_url == "http://127.0.0.1:8000/v1"  # trailing slash dropped
    assert cat.upstreams["local-vllm"].timeout_s == 60
    assert "api" in cat.alias_specs() and cat.models["api"].weights is None


@pytest.mark.parametrize("version, message", [
    ({"upstream": "nowhere", "model": "x"}, "unknown upstream 'nowhere'"),
    ({"upstream": "local-vllm"}, "needs model"),
    ({"upstream": "local-vllm", "model": "x", "engine": {"dtype": "float32"}}, "no engine"),
    ({"upstream": "local-vllm", "model": "x", "cost": {"per_replica_hour": 1}}, "input_per_million"),
    ({"model": "x"}, "set upstream too"),
])
def test_upstream_version_mistakes_name_the_field(version, message):
    raw = copy.deepcopy(UPSTREAMS)
    raw["models"]["api"]["versions"]["v1"] = version
    if "upstream" not in version:
        raw["models"]["api"]["weights"] = "smollm2-135m-instruct"
    with pytest.raises(CatalogueError, match=message):
        parse_catalogue(raw)


def test_a_pool_version_needs_weights_and_an_upstream_a_known_protocol():
    raw = copy.deepcopy(UPSTREAMS)
    raw["models"]["api"]["versions"]["local"] = {}
    with pytest.raises(CatalogueError, match="weights"):
        parse_catalogue(raw)
    raw = copy.deepcopy(UPSTREAMS)
    raw["upstreams"]["local-vllm"]["protocol"] = "grpc"
    with pytest.raises(CatalogueError, match=r"upstreams.local-vllm.protocol"):
        parse_catalogue(raw)

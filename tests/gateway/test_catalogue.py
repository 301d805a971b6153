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

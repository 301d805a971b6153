import pytest

from workers.config import EngineConfig
from workers.serve.protocol import Request, sampling_params
from workers.speculative_config import SpeculativeConfig


def test_off_by_default_and_a_dict_becomes_the_config():
    assert EngineConfig(model="m", device="cpu").speculative is None
    cfg = EngineConfig(model="m", device="cpu",
                       speculative={"method": "ngram", "num_tokens": 4, "lookup_min": 2, "lookup_max": 4})
    assert cfg.speculative == SpeculativeConfig("ngram", 4, 2, 4)
    draft = EngineConfig(model="m", device="cpu", speculative={"method": "draft", "model": "small", "num_tokens": 3})
    assert (draft.speculative.method, draft.speculative.model, draft.speculative.num_tokens) == ("draft", "small", 3)


@pytest.mark.parametrize("spec, match", [
    ({"method": "medusa"}, "method"),
    ({"num_tokens": 0}, "num_tokens"),
    ({"lookup_min": 3, "lookup_max": 2}, "lookup_min"),
    ({"method": "ngram", "num_layers": 4}, "draft"),
    ({"method": "draft", "num_layers": 0}, "num_layers"),
    ({"min_acceptance": 1.5}, "min_acceptance"),
    ({"ema_weight": 0}, "ema_weight"),
    ({"max_batch_size": -1}, "max_batch_size"),
    ({"num_token": 4}, "unknown keys"),
    ("ngram", "speculative must be"),
])
def test_bad_settings_are_refused_naming_the_field(spec, match):
    with pytest.raises(ValueError, match=match):
        EngineConfig(model="m", device="cpu", speculative=spec)


def test_the_catalogue_engine_block_reaches_the_engine_config():
    from gateway.catalogue import parse_catalogue
    from gateway.serving.pool import versions_from_catalogue

    spec = {"method": "ngram", "num_tokens": 3}
    raw = {"models": {"m": {"weights": "smollm2-135m-instruct", "price": {"input_per_million": 1},
                            "versions": {"spec": {"engine": {"device": "cpu", "speculative": spec}}}}}}
    [version] = versions_from_catalogue(parse_catalogue(raw))
    assert EngineConfig(**version.engine).speculative == SpeculativeConfig(num_tokens=3)


def test_a_request_may_opt_out_on_the_wire():
    assert sampling_params(Request(request_id="r")).speculative is True
    assert sampling_params(Request(request_id="r", speculative=False)).speculative is False
    with pytest.raises(ValueError, match="speculative"):
        sampling_params(Request(request_id="r", speculative="no"))

import pytest

from workers.config import EngineConfig


@pytest.mark.parametrize("kwargs, field", [
    ({"dtype": "float64"}, "dtype"),
    ({"device": "tpu"}, "device"),
    ({"kernels": "fast"}, "kernels"),
    ({"quantization": "int2"}, "quantization"),
    ({"block_size": 0}, "block_size"),
    ({"num_kv_blocks": 0}, "num_kv_blocks"),
    ({"kv_cache_memory_bytes": 0}, "kv_cache_memory_bytes"),
    ({"max_num_seqs": 0}, "max_num_seqs"),
    ({"max_num_batched_tokens": 0}, "max_num_batched_tokens"),
    ({"max_model_len": 0}, "max_model_len"),
])
def test_bad_engine_config_raises_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        EngineConfig(**kwargs)

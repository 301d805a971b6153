from __future__ import annotations

import pytest

from workers.serve.config import VersionServeConfig

ENGINE = {"model": "smollm2-135m-instruct"}


def test_standby_sits_on_top_of_the_warm_floor():
    cfg = VersionServeConfig("m@a", ENGINE, min_replicas=1, max_replicas=3, standby=2,
                             target_ongoing_requests=4, upscale_delay_s=1, downscale_delay_s=30)
    assert cfg.autoscaling_config() == {"min_replicas": 3, "initial_replicas": 3, "max_replicas": 5,
                                        "target_ongoing_requests": 4, "upscale_delay_s": 1,
                                        "downscale_delay_s": 30}


@pytest.mark.parametrize("kw,word", [
    ({"version": "no-at"}, "version"),
    ({"engine": {}}, "engine"),
    ({"min_replicas": -1}, "min_replicas"),
    ({"min_replicas": 3, "max_replicas": 2}, "max_replicas"),
    ({"standby": -1}, "standby"),
    ({"target_ongoing_requests": 0}, "target_ongoing_requests"),
    ({"num_cpus": -0.5}, "num_cpus"),
    ({"max_queued_requests": 0}, "max_queued_requests"),
])
def test_bad_configs_name_the_field(kw, word):
    args = {"version": "m@a", "engine": ENGINE, **kw}
    with pytest.raises(ValueError, match=word):
        VersionServeConfig(**args)


def test_replicas_run_their_methods_on_serves_loop_unless_the_catalogue_says_otherwise():
    cfg = VersionServeConfig("m@v", ENGINE, env={"OMP_NUM_THREADS": "2"})
    env = cfg.actor_options()["runtime_env"]["env_vars"]
    assert env == {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0", "OMP_NUM_THREADS": "2"}
    back = VersionServeConfig("m@v", ENGINE, env={"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "1"})
    assert back.actor_options()["runtime_env"]["env_vars"] == {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "1"}

"""Ray Serve's reactive rule: ceil(ongoing / target) within min..max, applied only after the upscale or
downscale delay has passed without the wish being interrupted."""
from __future__ import annotations

import pytest

from benchmarks.autoscale.autoscaler import AutoscalerConfig, RayAutoscaler


def autoscaler(**kw) -> RayAutoscaler:
    cfg = AutoscalerConfig(**{"min": 1, "max": 10, "target_ongoing_requests": 4, "upscale_delay_s": 5.0,
                              "downscale_delay_s": 60.0, "look_back_s": 1.0, **kw})
    return RayAutoscaler(cfg, tick_s=1.0)


def feed(a: RayAutoscaler, ongoing: float, start: int, seconds: int) -> list[tuple[int, float]]:
    return [a.update(float(t), ongoing) for t in range(start, start + seconds)]


def test_upscale_waits_for_the_upscale_delay():
    a = autoscaler()
    steps = feed(a, 20.0, 0, 10)  # wants ceil(20 / 4) = 5 from t = 0
    targets = [t for t, _ in steps]
    assert targets[:5] == [1] * 5 and targets[5:] == [5] * 5
    assert steps[5][1] == pytest.approx(5.0)  # took effect when the delay ran out


def test_upscale_inside_a_coarse_tick_takes_effect_at_the_delay_not_the_tick():
    a = RayAutoscaler(AutoscalerConfig(min=1, max=10, target_ongoing_requests=4, upscale_delay_s=5.0,
                                       look_back_s=10.0), tick_s=10.0)
    assert a.update(0.0, 20.0) == (5, 5.0)


def test_downscale_waits_for_the_downscale_delay():
    a = autoscaler()
    feed(a, 20.0, 0, 10)
    steps = feed(a, 4.0, 10, 70)  # wants 1 from t = 10
    targets = [t for t, _ in steps]
    assert targets[:60] == [5] * 60 and targets[60:] == [1] * 10


def test_an_interrupted_wish_starts_its_delay_again():
    a = autoscaler()
    feed(a, 20.0, 0, 4)
    feed(a, 4.0, 4, 1)  # back at the target for a moment: the clock resets
    targets = [t for t, _ in feed(a, 20.0, 5, 6)]
    assert targets[:5] == [1] * 5 and targets[5] == 5


def test_desired_is_bounded_by_min_max_and_a_floor():
    a = autoscaler(upscale_delay_s=0.0, downscale_delay_s=0.0)
    assert a.update(0.0, 1000.0) == (10, 0.0)
    assert a.update(1.0, 0.0) == (1, 1.0)
    assert a.update(2.0, 0.0, floor=3) == (3, 2.0)


def test_the_look_back_window_averages_ongoing_requests():
    a = autoscaler(look_back_s=4.0, upscale_delay_s=0.0)
    assert [a.update(float(t), v)[0] for t, v in enumerate([0, 0, 0, 40])] == [1, 1, 1, 3]  # mean 10 -> 3


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        AutoscalerConfig(min=3, max=2)
    with pytest.raises(ValueError):
        AutoscalerConfig(target_ongoing_requests=0)

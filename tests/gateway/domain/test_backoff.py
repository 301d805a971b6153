import random

import pytest

from gateway.domain.backoff import Backoff


def test_doubles_from_initial_and_stops_at_the_cap():
    assert [Backoff(0.5, 5.0).delay_s(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_uncapped_keeps_doubling_and_never_overflows():
    assert Backoff(0.25).delay_s(3) == 2.0
    assert Backoff(1.0, 3600.0).delay_s(10_000) == 3600.0


def test_jitter_stays_in_its_range_and_a_seeded_rand_repeats():
    b = Backoff(1.0, 8.0, (0.5, 1.0))
    delays = [b.delay_s(n, random.Random(7)) for n in range(6)]
    for n, d in enumerate(delays):
        step = min(2.0 ** n, 8.0)
        assert 0.5 * step <= d <= step
    assert delays == [b.delay_s(n, random.Random(7)) for n in range(6)]


def test_symmetric_jitter_may_go_above_the_step():
    b = Backoff(1.0, 1.0, (0.8, 1.2))
    rand = random.Random(3)
    delays = [b.delay_s(0, rand) for _ in range(200)]
    assert min(delays) >= 0.8 and max(delays) <= 1.2 and max(delays) > 1.0


def test_zero_initial_means_retry_at_once():
    assert Backoff(0.0).delay_s(5) == 0.0


@pytest.mark.parametrize("args", [(-1.0,), (2.0, 1.0), (1.0, 2.0, (1.2, 0.8)), (1.0, 2.0, (-0.1, 1.0))])
def test_bad_shapes_are_refused(args):
    with pytest.raises(ValueError):
        Backoff(*args)

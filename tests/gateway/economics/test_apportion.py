from decimal import Decimal

import pytest

from gateway.economics.apportion import apportion

Q = Decimal("0.0000000001")


def test_shares_add_up_exactly_and_remainders_go_to_the_largest():
    shares = apportion(2 * Q, {"a": Decimal(1), "b": Decimal(1), "c": Decimal(1)})
    assert shares == {"a": Q, "b": Q, "c": Decimal(0)}  # ties: the earliest key
    shares = apportion(Decimal("1"), {"a": Decimal(1), "b": Decimal(2)})
    assert shares == {"a": Decimal("0.3333333333"), "b": Decimal("0.6666666667")}
    assert sum(shares.values()) == Decimal(1)


def test_zero_weights_split_equally_and_nobody_gets_nothing():
    assert apportion(Decimal("0.2"), {"a": Decimal(0), "b": Decimal(0)}) == {"a": Decimal("0.1"), "b": Decimal("0.1")}
    assert apportion(Decimal(0), {}) == {}
    with pytest.raises(ValueError):
        apportion(Decimal(1), {})
    with pytest.raises(ValueError):
        apportion(Decimal("0.00000000001"), {"a": Decimal(1)})  # not a whole quantum

"""Split an amount of money among parties in proportion to exact weights, in whole money quanta that add up
to the amount exactly (largest remainder: floor every share, then one quantum each to the largest remainders,
ties to the earliest key)."""
from __future__ import annotations

from collections.abc import Hashable
from decimal import ROUND_FLOOR, Decimal

from gateway.db.types import MONEY_QUANTUM


def apportion(amount: Decimal, weights: dict[Hashable, Decimal]) -> dict[Hashable, Decimal]:
    """`amount` (a multiple of MONEY_QUANTUM, >= 0) split by `weights` (>= 0). All-zero weights split it
    equally. No parties: ValueError unless the amount is zero."""
    if any(w < 0 for w in weights.values()) or amount < 0:
        raise ValueError("amounts and weights must be >= 0")
    if not weights:
        if amount:
            raise ValueError(f"no one to give {amount} to")
        return {}
    total = sum(weights.values(), Decimal(0))
    if total == 0:
        weights, total = dict.fromkeys(weights, Decimal(1)), Decimal(len(weights))
    quanta = int((amount / MONEY_QUANTUM).to_integral_value())
    if quanta * MONEY_QUANTUM != amount:
        raise ValueError(f"{amount} is not a whole number of {MONEY_QUANTUM}")
    exact = {k: quanta * w / total for k, w in weights.items()}
    floors = {k: int(v.to_integral_value(rounding=ROUND_FLOOR)) for k, v in exact.items()}
    left = quanta - sum(floors.values())
    order = sorted(exact, key=lambda k: exact[k] - floors[k], reverse=True)  # stable: ties keep key order
    for k in order[:left]:
        floors[k] += 1
    return {k: Decimal(n) * MONEY_QUANTUM for k, n in floors.items()}

"""When a failed delivery is tried again: exponential, capped, with jitter so a receiver that comes back is not
hit by every gateway's retries in the same second."""
from __future__ import annotations

import random

from gateway.alerts.config import AlertsConfig


def retry_delay_s(attempts: int, config: AlertsConfig, rand: random.Random | None = None) -> float:
    """Delay after the `attempts`-th failed attempt (1-based): backoff_s * 2**(attempts-1), capped, jittered."""
    base = min(config.backoff_s * 2 ** max(attempts - 1, 0), config.backoff_max_s)
    spread = (rand or random).uniform(1 - config.jitter, 1 + config.jitter)
    return base * spread

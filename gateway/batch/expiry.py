"""A file's expiry as OpenAI's `expires_after` states it: an anchor ("created_at", the only one) and seconds."""
from __future__ import annotations

from datetime import datetime, timedelta

ANCHORS = ("created_at",)
MIN_S, MAX_S = 3600, 30 * 24 * 3600  # OpenAI's bounds: one hour to thirty days


class InvalidExpiry(ValueError):
    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def expires_at(anchor: str | None, seconds: str | None, *, created_at: datetime) -> datetime | None:
    """When a file uploaded at `created_at` expires (None: never), from the two form fields as sent."""
    if anchor is None and seconds is None:
        return None
    if anchor is None:
        raise InvalidExpiry("expires_after[anchor]", "expires_after[anchor] is required with expires_after[seconds].")
    if anchor not in ANCHORS:
        raise InvalidExpiry("expires_after[anchor]", f"expires_after[anchor] must be one of {', '.join(ANCHORS)}.")
    if seconds is None:
        raise InvalidExpiry("expires_after[seconds]", "expires_after[seconds] is required with expires_after[anchor].")
    try:
        n = int(seconds.strip())
    except ValueError:
        raise InvalidExpiry("expires_after[seconds]", "expires_after[seconds] must be an integer.") from None
    if not MIN_S <= n <= MAX_S:
        raise InvalidExpiry("expires_after[seconds]",
                            f"expires_after[seconds] must be between {MIN_S} and {MAX_S} (got {n}).")
    return created_at + timedelta(seconds=n)

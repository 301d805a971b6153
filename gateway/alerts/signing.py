"""Signatures receivers check: `x-tollgate-signature: t=<unix>,v1=<hex HMAC-SHA256(secret, f"{t}.{body}")>`.

The timestamp is signed with the body, so a captured request replayed later fails a receiver's tolerance check
(the event id header lets it drop a genuine retry it has already handled)."""
from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "x-tollgate-signature"
EVENT_ID_HEADER = "x-tollgate-event-id"
EVENT_TYPE_HEADER = "x-tollgate-event-type"


def signature(secret: str, body: bytes, t: int) -> str:
    mac = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256)
    return f"t={t},v1={mac.hexdigest()}"


def verify(secret: str, body: bytes, header: str, *, tolerance_s: float = 300.0, now: float | None = None) -> bool:
    """What a receiver runs: the header parses, some v1 matches (constant time), and t is recent."""
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if sep:
            parts.setdefault(key, []).append(value)
    try:
        t = int(parts["t"][0])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - t) > tolerance_s:
        return False
    expected = signature(secret, body, t).partition(",v1=")[2]
    return any(hmac.compare_digest(expected, v) for v in parts.get("v1", []))

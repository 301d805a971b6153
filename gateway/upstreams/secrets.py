"""Keys out of text: an upstream's error body may echo the credential it was sent (some providers quote the
key they refused); every message that leaves the backend goes through `scrub`."""
from __future__ import annotations

MASK = "[redacted]"


def scrub(text: str, *secrets: str | None) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    return text

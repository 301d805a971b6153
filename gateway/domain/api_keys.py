"""Tenant API keys: `tg-` + 32 random bytes, shown once, stored as sha256 + a visible prefix."""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

KEY_PREFIX = "tg-"
KEY_BYTES = 32
KEY_LENGTH = len(KEY_PREFIX) + 43  # token_urlsafe(32) is 43 characters
VISIBLE_CHARS = 12
_URLSAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True, slots=True)
class NewKey:
    key: str  # the secret: show it once, never store it
    prefix: str
    key_hash: str


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def visible_prefix(key: str) -> str:
    return key[:VISIBLE_CHARS]


def generate_key() -> NewKey:
    key = KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)
    return NewKey(key=key, prefix=visible_prefix(key), key_hash=hash_key(key))


def looks_like_key(key: str) -> bool:
    """Shape check, so junk never reaches the database."""
    return (len(key) == KEY_LENGTH and key.startswith(KEY_PREFIX)
            and all(c in _URLSAFE for c in key[len(KEY_PREFIX):]))


def key_matches(key: str, key_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key), key_hash)

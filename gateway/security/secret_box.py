"""Secrets at rest (upstream API keys): Fernet (AES-128-CBC + HMAC-SHA256) under a key derived from the
operator's secret (TOLLGATE_SECRET_KEY, else the admin key), so every replica with the same secret reads them
and a database dump alone reveals none."""
from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken

_CONTEXT = b"tollgate secret box v1\x00"  # the derived key is for this use only


class SecretBoxError(ValueError):
    """A stored secret that this key cannot open (another secret key, or a damaged value)."""


class SecretBox:
    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("a SecretBox needs a non-empty secret")
        self._fernet = Fernet(base64.urlsafe_b64encode(hashlib.sha256(_CONTEXT + secret.encode()).digest()))

    def __repr__(self) -> str:
        return "SecretBox(…)"

    def seal(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode("ascii")

    def open(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode()
        except (InvalidToken, UnicodeError) as e:
            raise SecretBoxError("a stored secret cannot be decrypted with this gateway's secret key") from e

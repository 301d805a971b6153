"""Secrets at rest (upstream API keys, webhook signing secrets): Fernet (AES-128-CBC + HMAC-SHA256) under a key
derived from the operator's secret (TOLLGATE_SECRET_KEY, else the admin key), so every replica with the same
secret reads them and a database dump alone reveals none.

Rotation: TOLLGATE_SECRET_KEY may be `new,old[,older...]`. The first seals; every one opens (MultiFernet), so
values sealed under an old key keep working until they are sealed again under the new one. A value sealed under a
key that is no longer listed cannot be opened (SecretBoxError): it has to be set again."""
from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

_CONTEXT = b"tollgate secret box v1\x00"  # the derived key is for this use only


class SecretBoxError(ValueError):
    """A stored secret that this key cannot open (another secret key, or a damaged value)."""


def _fernet(secret: str) -> Fernet:
    if not secret:
        raise ValueError("a SecretBox needs a non-empty secret")
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(_CONTEXT + secret.encode()).digest()))


class SecretBox:
    def __init__(self, secret: str, *, previous: Sequence[str] = ()) -> None:
        """`secret` seals and opens; each of `previous` (keys rotated out) only opens."""
        self._current = _fernet(secret)
        self._fernet = MultiFernet([self._current, *(_fernet(p) for p in previous)])
        self.rotating = bool(previous)

    @classmethod
    def for_gateway(cls, secret_key: str, admin_key: str) -> SecretBox:
        """The gateway's box: TOLLGATE_SECRET_KEY as `current[,previous...]`, else the admin key (taken whole)."""
        keys = [k.strip() for k in secret_key.split(",") if k.strip()]
        if not keys:
            return cls(admin_key)
        return cls(keys[0], previous=keys[1:])

    def __repr__(self) -> str:
        return "SecretBox(…)"

    def seal(self, plaintext: str) -> str:
        return self._current.encrypt(plaintext.encode()).decode("ascii")

    def open(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode()
        except (InvalidToken, UnicodeError) as e:
            raise SecretBoxError("a stored secret cannot be decrypted with this gateway's secret key") from e

    def resealed(self, token: str) -> str | None:
        """`token` sealed again under the current key when a previous key sealed it; None when it already is."""
        try:
            self._current.decrypt(token.encode("ascii"))
            return None
        except (InvalidToken, UnicodeError):
            pass
        return self.seal(self.open(token))

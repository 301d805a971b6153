"""CSRF tokens: an HMAC of the session id (or of the sign-in form's nonce), checked on every form post.

The session cookie is SameSite=Strict already; the token is the second lock, for browsers or proxies that
do not honour it."""
from __future__ import annotations

import hashlib
import hmac


class CsrfTokens:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def token(self, binding: str) -> str:
        """The token for a session id (or a sign-in nonce)."""
        return hmac.new(self._key, binding.encode(), hashlib.sha256).hexdigest()

    def valid(self, binding: str | None, given: object) -> bool:
        """`given` is a form field as received: a file upload in its place is no token."""
        if not binding or not isinstance(given, str) or not given:
            return False
        return hmac.compare_digest(self.token(binding), given)

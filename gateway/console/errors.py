"""What a console page raises instead of an API error: go and sign in, or you may not see this."""
from __future__ import annotations


class SignInRequired(Exception):
    """No valid session: the page answers 303 to the sign-in form."""


class Forbidden(Exception):
    """A session that may not open this page (a tenant on an admin page, a post without its CSRF token)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

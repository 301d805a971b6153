"""The console's one config: how long a sign-in lasts and how long a page of a table is."""
from __future__ import annotations

from dataclasses import dataclass

COOKIE = "tollgate_console"
LOGIN_COOKIE = "tollgate_console_login"  # the sign-in form's CSRF nonce, before any session exists


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    session_ttl_s: int = 8 * 3600
    page_size: int = 25  # rows per page of a long table (tenants, bills, audit trail)

    def __post_init__(self) -> None:
        if self.session_ttl_s < 60:
            raise ValueError(f"session_ttl_s must be at least 60, got {self.session_ttl_s}")
        if not 1 <= self.page_size <= 1000:
            raise ValueError(f"page_size must be 1-1000, got {self.page_size}")

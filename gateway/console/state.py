"""What the console keeps per app: its config, the session and CSRF signers, the signed-out sessions."""
from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from gateway.console.config import ConsoleConfig
from gateway.console.csrf import CsrfTokens
from gateway.console.rates import TokenRate
from gateway.console.session import Revocations, SessionCodec, derive_key


@dataclass(slots=True)
class ConsoleState:
    config: ConsoleConfig
    sessions: SessionCodec
    csrf: CsrfTokens
    revocations: Revocations = field(default_factory=Revocations)
    token_rate: TokenRate = field(default_factory=TokenRate)  # the workers page's tokens/s

    @classmethod
    def for_admin_key(cls, admin_key: str, config: ConsoleConfig,
                      revocations: Revocations | None = None) -> ConsoleState:
        return cls(config, SessionCodec(derive_key(admin_key, "session")), CsrfTokens(derive_key(admin_key, "csrf")),
                   revocations or Revocations())


def console_state(request: Request) -> ConsoleState:
    """Built on first use: the admin key exists only once the app's services have started."""
    app = request.app
    state = getattr(app.state, "console", None)
    if state is None:
        services = app.state.services
        config = ConsoleConfig(session_ttl_s=services.settings.console_session_ttl_s)
        state = app.state.console = ConsoleState.for_admin_key(
            services.admin_key, config, Revocations(services.session_revocations))
    return state

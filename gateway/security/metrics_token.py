"""The credential for /metrics: Settings.metrics_token, else generated once into
<data_dir>/metrics_token (0600). Prometheus sends it as a Bearer token; so may the admin key."""
from __future__ import annotations

from pathlib import Path

from gateway.security.secret_file import ensure_secret_file, read_secret_file, require_strong
from gateway.settings import Settings

METRICS_TOKEN_PREFIX = "tgm-"
METRICS_TOKEN_FILE = "metrics_token"


def metrics_token_path(settings: Settings) -> Path:
    return Path(settings.data_dir) / METRICS_TOKEN_FILE


def read_metrics_token(settings: Settings) -> str | None:
    """The configured or previously generated token, without creating one."""
    return settings.metrics_token or read_secret_file(metrics_token_path(settings))


def ensure_metrics_token(settings: Settings) -> tuple[str, Path | None]:
    """(token, file it lives in); the file is None when the token came from the environment.

    Side effect: on the first start without TOLLGATE_METRICS_TOKEN, writes a new token to
    <data_dir>/metrics_token with mode 0600. Raises WeakSecret for a short token.
    """
    path = metrics_token_path(settings)
    if settings.metrics_token:
        hint = (f"Unset TOLLGATE_METRICS_TOKEN to have one generated into {path}, or set a random one "
                "(`openssl rand -hex 32`).")
        return require_strong(settings.metrics_token, what="metrics token", source="TOLLGATE_METRICS_TOKEN",
                              hint=hint), None
    token = ensure_secret_file(path, METRICS_TOKEN_PREFIX)
    hint = "Delete the file to have a new token generated, or set TOLLGATE_METRICS_TOKEN."
    return require_strong(token, what="metrics token", source=str(path), hint=hint), path

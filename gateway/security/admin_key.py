"""The admin credential: Settings.admin_key, else generated once into <data_dir>/admin_key (0600).

A key shorter than MIN_SECRET_CHARS is refused at start-up. Audit logs name the credential by
`admin_actor` (a fingerprint), never by anything the client says about itself."""
from __future__ import annotations

from pathlib import Path

from gateway.security.secret_file import (MIN_SECRET_CHARS, ensure_secret_file, fingerprint, read_secret_file,
                                          require_strong, secret_matches)
from gateway.settings import Settings

__all__ = ["ADMIN_KEY_FILE", "ADMIN_KEY_PREFIX", "MIN_SECRET_CHARS", "admin_actor", "admin_key_matches",
           "admin_key_path", "ensure_admin_key", "read_admin_key"]

ADMIN_KEY_PREFIX = "tga-"
ADMIN_KEY_FILE = "admin_key"


def admin_key_path(settings: Settings) -> Path:
    return Path(settings.data_dir) / ADMIN_KEY_FILE


def read_admin_key(settings: Settings) -> str | None:
    """The configured or previously generated key, without creating one."""
    return settings.admin_key or read_secret_file(admin_key_path(settings))


def ensure_admin_key(settings: Settings) -> tuple[str, Path | None]:
    """(key, file it lives in); the file is None when the key came from the environment.

    Side effect: on the first start without TOLLGATE_ADMIN_KEY, writes a new key to
    <data_dir>/admin_key with mode 0600; later starts reuse it. Raises WeakSecret for a short key.
    """
    path = admin_key_path(settings)
    if settings.admin_key:
        hint = (f"Unset TOLLGATE_ADMIN_KEY to have one generated into {path}, or set a random one "
                "(`openssl rand -hex 32`).")
        return require_strong(settings.admin_key, what="admin key", source="TOLLGATE_ADMIN_KEY", hint=hint), None
    key = ensure_secret_file(path, ADMIN_KEY_PREFIX)
    hint = "Delete the file to have a new key generated, or set TOLLGATE_ADMIN_KEY."
    return require_strong(key, what="admin key", source=str(path), hint=hint), path


def admin_key_matches(given: str, expected: str) -> bool:
    return secret_matches(given, expected)


def admin_actor(admin_key: str) -> str:
    """Who made an admin change, for audit logs: "admin:<fingerprint of the credential>"."""
    return f"admin:{fingerprint(admin_key)}"

"""The admin credential: Settings.admin_key, else generated once into <data_dir>/admin_key (0600)."""
from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from gateway.settings import Settings

ADMIN_KEY_PREFIX = "tga-"
ADMIN_KEY_FILE = "admin_key"


def admin_key_path(settings: Settings) -> Path:
    return Path(settings.data_dir) / ADMIN_KEY_FILE


def read_admin_key(settings: Settings) -> str | None:
    """The configured or previously generated key, without creating one."""
    if settings.admin_key:
        return settings.admin_key
    path = admin_key_path(settings)
    if not path.exists():
        return None
    return path.read_text().strip() or None


def ensure_admin_key(settings: Settings) -> tuple[str, Path | None]:
    """(key, file it lives in); the file is None when the key came from the environment.

    Side effect: on the first start without TOLLGATE_ADMIN_KEY, writes a new key to
    <data_dir>/admin_key with mode 0600; later starts reuse it.
    """
    if settings.admin_key:
        return settings.admin_key, None
    path = admin_key_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = ADMIN_KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        # O_EXCL: two processes starting at once cannot both write a key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        existing = path.read_text().strip()
        if not existing:
            raise RuntimeError(f"admin key file {path} is empty; delete it to generate a new key")
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
        return existing, path
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    return key, path


def admin_key_matches(given: str, expected: str) -> bool:
    return bool(expected) and hmac.compare_digest(given.encode(), expected.encode())

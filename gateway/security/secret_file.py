"""Operator secrets (the admin key, the metrics token): set in Settings, else generated once into a
file under data_dir with mode 0600. Both must be long enough not to be guessed."""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

MIN_SECRET_CHARS = 32


class WeakSecret(RuntimeError):
    """A configured secret too short to stand as a credential; start-up stops on it."""


def require_strong(secret: str, *, what: str, source: str, hint: str) -> str:
    """`secret`, or WeakSecret naming where it came from and how to get a good one."""
    if len(secret) < MIN_SECRET_CHARS:
        raise WeakSecret(f"refusing a {len(secret)}-character {what} from {source}: it needs at least "
                         f"{MIN_SECRET_CHARS} characters. {hint}")
    return secret


def read_secret_file(path: Path) -> str | None:
    """The file's secret, or None when there is no file (or it is empty)."""
    if not path.exists():
        return None
    return path.read_text().strip() or None


def ensure_secret_file(path: Path, prefix: str) -> str:
    """The secret in `path`; on first use, writes a new random one there with mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        secret = prefix + secrets.token_urlsafe(32)
        # Written whole beside it, then linked into place: link() fails if the name exists, so of two
        # processes starting at once one wins, and neither ever reads a half-written file.
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secret + "\n")
            os.link(draft, path)
            return secret
        except FileExistsError:
            pass  # another process won; use its secret
        finally:
            draft.unlink()
    existing = path.read_text().strip()
    if not existing:
        raise RuntimeError(f"secret file {path} is empty; delete it to generate a new one")
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)
    return existing


def secret_matches(given: str, expected: str) -> bool:
    """Constant-time; an unset (empty) secret admits nobody."""
    return bool(expected) and hmac.compare_digest(given.encode(), expected.encode())


def fingerprint(secret: str) -> str:
    """A short, stable name for a secret that does not reveal it (12 hex digits of SHA-256)."""
    return hashlib.sha256(b"tollgate-fingerprint\x00" + secret.encode()).hexdigest()[:12]

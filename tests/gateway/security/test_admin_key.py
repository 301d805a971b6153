import stat

import pytest

from gateway.security.admin_key import (MIN_SECRET_CHARS, admin_actor, admin_key_matches, ensure_admin_key,
                                        read_admin_key)
from gateway.security.secret_file import WeakSecret
from gateway.settings import Settings

FROM_ENV = "from-env-" + "k" * 32


def test_configured_key_wins_and_writes_nothing(tmp_path):
    settings = Settings(data_dir=tmp_path, admin_key=FROM_ENV)
    assert ensure_admin_key(settings) == (FROM_ENV, None)
    assert not (tmp_path / "admin_key").exists()
    assert read_admin_key(settings) == FROM_ENV


def test_generated_once_with_mode_0600_then_reused(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", admin_key="")
    assert read_admin_key(settings) is None
    key, path = ensure_admin_key(settings)
    assert path == tmp_path / "data" / "admin_key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert key.startswith("tga-") and len(key) > 40
    assert ensure_admin_key(settings) == (key, path)
    assert read_admin_key(settings) == key


def test_loose_permissions_are_tightened(tmp_path):
    settings = Settings(data_dir=tmp_path, admin_key="")
    key, path = ensure_admin_key(settings)
    path.chmod(0o644)
    assert ensure_admin_key(settings) == (key, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_empty_key_file_is_an_error(tmp_path):
    (tmp_path / "admin_key").write_text("")
    with pytest.raises(RuntimeError, match="empty"):
        ensure_admin_key(Settings(data_dir=tmp_path, admin_key=""))


def test_a_short_configured_key_is_refused_at_start_up(tmp_path):
    short = "k" * (MIN_SECRET_CHARS - 1)
    with pytest.raises(WeakSecret, match=r"31-character admin key from TOLLGATE_ADMIN_KEY.*at least 32"):
        ensure_admin_key(Settings(data_dir=tmp_path, admin_key=short))
    assert ensure_admin_key(Settings(data_dir=tmp_path, admin_key=short + "k"))[0] == short + "k"


def test_a_short_key_in_the_file_is_refused_too(tmp_path):
    (tmp_path / "admin_key").write_text("tga-short\n")
    with pytest.raises(WeakSecret, match="admin_key"):
        ensure_admin_key(Settings(data_dir=tmp_path, admin_key=""))


def test_admin_key_compare():
    assert admin_key_matches("abc", "abc")
    assert not admin_key_matches("abd", "abc")
    assert not admin_key_matches("", "")  # no configured key admits nobody


def test_the_audit_actor_names_the_credential_without_revealing_it():
    actor = admin_actor(FROM_ENV)
    assert actor.startswith("admin:") and len(actor) == len("admin:") + 12
    assert actor == admin_actor(FROM_ENV) and actor != admin_actor(FROM_ENV + "x")
    assert FROM_ENV not in actor and FROM_ENV[:8] not in actor

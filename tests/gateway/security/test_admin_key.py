import stat

import pytest

from gateway.security.admin_key import admin_key_matches, ensure_admin_key, read_admin_key
from gateway.settings import Settings


def test_configured_key_wins_and_writes_nothing(tmp_path):
    settings = Settings(data_dir=tmp_path, admin_key="from-env")
    assert ensure_admin_key(settings) == ("from-env", None)
    assert not (tmp_path / "admin_key").exists()
    assert read_admin_key(settings) == "from-env"


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


def test_admin_key_compare():
    assert admin_key_matches("abc", "abc")
    assert not admin_key_matches("abd", "abc")
    assert not admin_key_matches("", "")  # no configured key admits nobody

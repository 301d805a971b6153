"""Compose mounts secrets as files: the settings read NAME_FILE for every secret setting, NAME itself first."""
from __future__ import annotations

import pytest

from gateway.settings import SECRET_FILE_VARS, Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in SECRET_FILE_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name + "_FILE", raising=False)


def test_secrets_come_from_the_files_named(tmp_path, monkeypatch):
    values = {"TOLLGATE_ADMIN_KEY": "tga-" + "a" * 64, "TOLLGATE_METRICS_TOKEN": "tgm-" + "m" * 64,
              "TOLLGATE_CACHE_SALT_SECRET": "s" * 40, "DATABASE_URL": "postgresql://tollgate:pw@postgres:5432/tollgate",
              "REDIS_URL": "redis://redis:6379/0"}
    for name, value in values.items():
        (tmp_path / name).write_text(value + "\n")  # as make-env.sh writes them: one line
        monkeypatch.setenv(name + "_FILE", str(tmp_path / name))
    s = Settings()
    assert (s.admin_key, s.metrics_token, s.cache_salt_secret, s.database_url, s.redis_url) == tuple(values.values())


def test_the_variable_itself_wins_over_its_file(tmp_path, monkeypatch):
    (tmp_path / "key").write_text("tga-from-file")
    monkeypatch.setenv("TOLLGATE_ADMIN_KEY_FILE", str(tmp_path / "key"))
    monkeypatch.setenv("TOLLGATE_ADMIN_KEY", "tga-from-env")
    assert Settings().admin_key == "tga-from-env"


def test_an_unreadable_file_stops_start_up_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"DATABASE_URL_FILE=.*missing: cannot read it"):
        Settings()


def test_other_settings_have_no_file_form(tmp_path, monkeypatch):
    (tmp_path / "dir").write_text("/elsewhere")
    monkeypatch.setenv("TOLLGATE_DATA_DIR_FILE", str(tmp_path / "dir"))
    assert str(Settings().data_dir) != "/elsewhere"

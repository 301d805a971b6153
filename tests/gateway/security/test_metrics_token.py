import stat

import pytest

from gateway.security.metrics_token import ensure_metrics_token, read_metrics_token
from gateway.security.secret_file import WeakSecret
from gateway.settings import Settings


def test_configured_token_wins_and_writes_nothing(tmp_path):
    token = "m" * 40
    settings = Settings(data_dir=tmp_path, metrics_token=token)
    assert ensure_metrics_token(settings) == (token, None)
    assert not (tmp_path / "metrics_token").exists()
    assert read_metrics_token(settings) == token


def test_generated_once_with_mode_0600_then_reused(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    assert read_metrics_token(settings) is None
    token, path = ensure_metrics_token(settings)
    assert path == tmp_path / "data" / "metrics_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert token.startswith("tgm-") and len(token) > 40
    assert ensure_metrics_token(settings) == (token, path) and read_metrics_token(settings) == token


def test_a_short_token_is_refused(tmp_path):
    with pytest.raises(WeakSecret, match="TOLLGATE_METRICS_TOKEN"):
        ensure_metrics_token(Settings(data_dir=tmp_path, metrics_token="scrape-me"))

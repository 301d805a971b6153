from __future__ import annotations

import pytest

from gateway.security.secret_box import SecretBox, SecretBoxError


def test_sealed_secrets_open_only_with_the_same_secret():
    box = SecretBox("operator-secret")
    token = box.seal("sk-live-123456")
    assert "sk-live-123456" not in token and token != box.seal("sk-live-123456")  # fresh IV each time
    assert box.open(token) == "sk-live-123456"
    assert SecretBox("operator-secret").open(token) == "sk-live-123456"  # another replica, same secret
    with pytest.raises(SecretBoxError):
        SecretBox("another-secret").open(token)
    with pytest.raises(SecretBoxError):
        box.open("not a token")
    assert "operator-secret" not in repr(box)
    with pytest.raises(ValueError):
        SecretBox("")

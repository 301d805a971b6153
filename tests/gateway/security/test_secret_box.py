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


def test_previous_keys_open_and_only_the_current_one_seals():
    old = SecretBox("old-secret").seal("sk-old")
    box = SecretBox("new-secret", previous=["old-secret"])
    assert box.rotating and box.open(old) == "sk-old"
    assert SecretBox("new-secret").open(box.seal("sk-new")) == "sk-new"  # sealed under the current key alone
    resealed = box.resealed(old)
    assert resealed is not None and SecretBox("new-secret").open(resealed) == "sk-old"
    assert box.resealed(resealed) is None  # already under the current key
    with pytest.raises(SecretBoxError):
        box.resealed(SecretBox("forgotten").seal("x"))


def test_the_gateway_box_reads_a_comma_separated_secret_key_else_the_admin_key_whole():
    old = SecretBox("old").seal("v")
    box = SecretBox.for_gateway(" new , old ", "admin-key")
    assert box.open(old) == "v" and SecretBox("new").open(box.seal("w")) == "w"
    assert not SecretBox.for_gateway("new", "admin-key").rotating
    from_admin = SecretBox.for_gateway("", "admin,key")  # an admin key is never split
    assert SecretBox("admin,key").open(from_admin.seal("x")) == "x"

from __future__ import annotations

import pytest

from workers.serve.health import VersionHealth


def test_follows_serve_counts():
    h = VersionHealth()
    h.update({"a": 1, "b": 0}, now=0)
    assert h.snapshot() == {"a": True, "b": False}


def test_a_lone_lost_replica_fails_over_until_serve_notices_and_replaces_it():
    h = VersionHealth(grace_s=10)
    h.update({"a": 1}, now=0)
    h.lost("a", now=1)
    assert not h.healthy("a")
    h.update({"a": 1}, now=2)  # Serve has not noticed yet: still counts the dead replica
    assert not h.healthy("a")
    h.update({"a": 0}, now=3)  # noticed; the replacement is loading
    assert not h.healthy("a")
    h.update({"a": 1}, now=9)  # the replacement is up
    assert h.healthy("a")


def test_losing_one_of_several_replicas_keeps_the_version():
    h = VersionHealth()
    h.update({"a": 2}, now=0)
    h.lost("a", now=1)
    assert h.healthy("a")


def test_a_transient_loss_expires_after_the_grace():
    h = VersionHealth(grace_s=5)
    h.update({"a": 1}, now=0)
    h.lost("a", now=1)
    h.update({"a": 1}, now=3)
    assert not h.healthy("a")
    h.update({"a": 1}, now=7)
    assert h.healthy("a")


def test_grace_must_be_positive():
    with pytest.raises(ValueError):
        VersionHealth(grace_s=0)

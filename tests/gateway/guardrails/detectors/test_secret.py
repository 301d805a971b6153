import secrets

import pytest

from gateway.guardrails.detectors.secret import SecretDetector, entropy


def found(text: str) -> list[str]:
    return [text[s:e] for s, e in SecretDetector().spans(text)]


@pytest.mark.parametrize("secret", ["sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t", "sk-ABCDEFGHIJKLMNOPQRSTUVWX1234",
                                    "AKIAIOSFODNN7EXAMPLE", "ghp_" + "a1B2c3D4e5" * 4,
                                    "xoxb-1234567890-abcdefghij", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
                                    "tg-" + "Zx8" * 10])
def test_known_key_shapes_are_found(secret):
    assert found(f"key={secret} ok") == [secret]


def test_a_random_token_is_found_by_its_entropy():
    token = secrets.token_urlsafe(32)
    while not (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)):
        token = secrets.token_urlsafe(32)
    assert found(f"token {token}") == [token]


@pytest.mark.parametrize("text", ["sk-short", "AKIA1234", "a" * 40, "supercalifragilisticexpialidocious_words",
                                  "sha " + "da5788c98082e479d74ef5f8b3f8fff2ca382439acb6ef853241adb7b008ebef",
                                  "uuid 123e4567-e89b-12d3-a456-426614174000", "desk-organizer-with-many-words-inside"])
def test_near_misses_are_not_secrets(text):
    assert found(text) == []


def test_entropy():
    assert entropy("aaaa") == 0 and entropy("abcd") == 2

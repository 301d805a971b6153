import pytest

from gateway.guardrails.detectors.phone import PhoneDetector


def found(text: str) -> list[str]:
    return [text[s:e] for s, e in PhoneDetector().spans(text)]


@pytest.mark.parametrize("phone", ["+1 415-555-0132", "(415) 555 0132", "+44 20 7946 0958", "415.555.0132",
                                   "+33612345678", "020 7946 0958"])
def test_phone_numbers_are_found(phone):
    assert found(f"call {phone} now") == [phone]


@pytest.mark.parametrize("text", ["on 2026-12-01", "in 1999", "room 12 34", "ip 192.168.10.20",
                                  "version 10.20.30.40", "a 17-digit 12345678901234567 id"])
def test_near_misses_are_not_phone_numbers(text):
    assert found(text) == []

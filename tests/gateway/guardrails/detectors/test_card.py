"""Cards are Luhn-checked: a 16-digit number that fails the checksum is not a card."""
import pytest

from gateway.guardrails.detectors.card import CardDetector, luhn_ok


def found(text: str) -> list[str]:
    return [text[s:e] for s, e in CardDetector().spans(text)]


@pytest.mark.parametrize("number", ["4111 1111 1111 1111", "4111-1111-1111-1111", "5555555555554444",
                                    "378282246310005", "6011 0009 9013 9424"])
def test_valid_cards_are_found_in_their_usual_spellings(number):
    assert found(f"pay with {number} today") == [number]


@pytest.mark.parametrize("text", ["order 4111111111111112", "id 1234567890123456", "tiny 4111 1111",
                                  "zeros 0000000000000000", "longer 41111111111111111111111",
                                  "date 2026-12-01"])
def test_near_misses_are_not_cards(text):
    assert found(text) == []


def test_luhn():
    assert luhn_ok("79927398713") and not luhn_ok("79927398710")

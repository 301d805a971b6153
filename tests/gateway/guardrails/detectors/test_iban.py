import pytest

from gateway.guardrails.detectors.iban import IbanDetector, mod97_ok


def found(text: str) -> list[str]:
    return [text[s:e] for s, e in IbanDetector().spans(text)]


@pytest.mark.parametrize("iban", ["DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432",
                                  "FR14 2004 1010 0505 0001 3M02 606"])
def test_valid_ibans_are_found(iban):
    assert found(f"send to {iban} please") == [iban]


def test_a_word_after_a_grouped_iban_does_not_hide_it():
    assert found("DE89 3704 0044 0532 0130 00 FOO") == ["DE89 3704 0044 0532 0130 00"]


@pytest.mark.parametrize("text", ["DE88 3704 0044 0532 0130 00", "GB82WEST12345698765433", "AB12 3456",
                                  "XX00 0000 0000 0000 0000 00"])
def test_a_failed_checksum_or_a_short_code_is_not_an_iban(text):
    assert found(text) == []


def test_mod97():
    assert mod97_ok("GB82WEST12345698765432") and not mod97_ok("GB83WEST12345698765432")

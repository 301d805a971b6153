from gateway.guardrails.detectors.email import EmailDetector


def found(text: str) -> list[str]:
    return [text[s:e] for s, e in EmailDetector().spans(text)]


def test_addresses_are_found_whole():
    assert found("write to john.doe+x@mail.example.co.uk, or a_b@ex-ample.org.") == [
        "john.doe+x@mail.example.co.uk", "a_b@ex-ample.org"]


def test_near_misses_are_not_addresses():
    for text in ("user@localhost", "@example.com", "john..doe@example.com", "a@b.c", "price 5@3.50",
                 "twitter @handle"):
        assert found(text) == [], text

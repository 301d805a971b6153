import pytest

from gateway.guardrails.detectors.ip import IpDetector


def found(text: str) -> list[str]:
    return [text[s:e] for s, e in IpDetector().spans(text)]


@pytest.mark.parametrize("ip", ["192.168.1.10", "8.8.8.8", "2001:db8::1", "fe80::1ff:fe23:4567:890a",
                                "::ffff:10.0.0.1", "2001:0db8:85a3:0000:0000:8a2e:0370:7334"])
def test_addresses_are_found(ip):
    assert found(f"host {ip}. done") == [ip]


@pytest.mark.parametrize("text", ["999.1.1.1", "1.2.3", "at 12:30:45", "std::vector", "foo::bar", "1.2.3.4.5",
                                  "ratio 3:2"])
def test_near_misses_are_not_addresses(text):
    assert found(text) == []

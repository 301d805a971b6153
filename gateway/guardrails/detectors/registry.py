"""The entities a `pii` rule may name, and their detectors (one instance each: they hold no state)."""
from __future__ import annotations

from gateway.guardrails.detectors.base import Detector
from gateway.guardrails.detectors.card import CardDetector
from gateway.guardrails.detectors.email import EmailDetector
from gateway.guardrails.detectors.iban import IbanDetector
from gateway.guardrails.detectors.ip import IpDetector
from gateway.guardrails.detectors.phone import PhoneDetector
from gateway.guardrails.detectors.secret import SecretDetector

DETECTORS: dict[str, Detector] = {d.name: d for d in (EmailDetector(), PhoneDetector(), CardDetector(),
                                                      IbanDetector(), IpDetector(), SecretDetector())}
ENTITIES = tuple(DETECTORS)

from __future__ import annotations

import pytest

from gateway.catalogue import parse_catalogue

FP32, BF16 = "smollm2-135m-instruct@fp32", "smollm2-135m-instruct@bf16"


def raw_catalogue() -> dict:
    return {
        "models": {
            "smollm2-135m-instruct": {
                "weights": "smollm2-135m-instruct",
                "price": {"input_per_million": 0.1, "output_per_million": 0.3},
                "versions": {"fp32": {"engine": {"dtype": "float32"}}, "bf16": {"engine": {"dtype": "bfloat16"}}},
            },
            "other": {
                "weights": "smollm2-135m-instruct",
                "price": {"input_per_million": 0.2},
                "versions": {"v1": {}},
            },
        },
        "aliases": {
            "chat": {"weights": {FP32: 90, BF16: 10}, "fallbacks": [FP32, "other"]},
        },
    }


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def catalogue():
    return parse_catalogue(raw_catalogue())


@pytest.fixture
def clock():
    return FakeClock()

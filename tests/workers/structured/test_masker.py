"""The grammar mask in the sampler, over random logits: whatever the 'model' prefers, the output is valid."""
import json
import logging

import jsonschema
import pytest
import torch

from tests.workers.engine.fakes import EOS, FakeTokenizer
from workers.engine.sampler import Sampler
from workers.engine.sequence import Sequence
from workers.sampling_params import SamplingParams
from workers.structured import StructuredOutput
from workers.structured.compiler import GrammarCompiler

VOCAB = 257
ITEM = {"type": "object", "properties": {"sku": {"type": "string", "maxLength": 4}, "qty": {"type": "integer",
        "minimum": 1, "maximum": 9}}, "required": ["sku", "qty"], "additionalProperties": False}
SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 6},
    "price": {"type": "number", "minimum": 0, "maximum": 100},
    "ok": {"type": "boolean"},
    "colour": {"enum": ["red", "green", "blue"]},
    "items": {"type": "array", "items": ITEM, "maxItems": 2},
}, "required": ["name", "ok", "colour", "items"], "additionalProperties": False}


@pytest.fixture(scope="module")
def compiler():
    return GrammarCompiler(FakeTokenizer())


def _seq(compiler, request_id: str = "r", temperature: float = 1.0, n: int = 1, schema: dict = SCHEMA) -> Sequence:
    params = SamplingParams(max_tokens=500, temperature=temperature, seed=5, n=n,
                            structured=StructuredOutput("json_schema", schema))
    return Sequence(request_id, [1, 2, 3], 3, params, 4, grammar=compiler.compile(params.structured))


def _decode(sampler: Sampler, seq: Sequence, seed: int, *, width: int = VOCAB) -> str:
    g = torch.Generator().manual_seed(seed)
    for _ in range(500):
        token = sampler.sample(torch.randn(1, width, generator=g) * 3, [seq]).token_ids[0]
        if token == EOS:
            return FakeTokenizer().decode(seq.output_token_ids)
        seq.token_ids.append(token)
    raise AssertionError("no EOS in 500 tokens")


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_random_logits_always_decode_to_a_value_valid_under_the_schema(compiler, temperature):
    for seed in range(8):
        sampler = Sampler(seed=0, eos_token_ids={EOS})
        text = _decode(sampler, _seq(compiler, temperature=temperature), seed)
        jsonschema.validate(json.loads(text), SCHEMA)


def test_a_model_head_wider_than_the_vocabulary_never_draws_past_it(compiler):
    sampler = Sampler(seed=0, eos_token_ids={EOS})
    text = _decode(sampler, _seq(compiler), 3, width=VOCAB + 40)  # _decode's token < VOCAB, or decode fails
    jsonschema.validate(json.loads(text), SCHEMA)


def test_plain_rows_beside_a_structured_one_are_untouched(compiler):
    logits = torch.randn(3, VOCAB, generator=torch.Generator().manual_seed(0))
    plain = [Sequence(r, [1, 2], 2, SamplingParams(temperature=t, seed=1), 4) for r, t in (("a", 0), ("c", 1.0))]
    alone = Sampler(seed=0, eos_token_ids={EOS}).sample(logits[[0, 2]].clone(), plain).token_ids
    mixed = logits.clone()
    tokens = Sampler(seed=0, eos_token_ids={EOS}).sample(mixed, [plain[0], _seq(compiler, "b"), plain[1]]).token_ids
    assert [tokens[0], tokens[2]] == alone and tokens[1] == ord("{")
    assert torch.equal(mixed[[0, 2]], logits[[0, 2]]) and torch.isinf(mixed[1]).sum() == VOCAB - 1


def test_each_of_n_completions_gets_its_own_matcher_at_the_parents_first_sample(compiler):
    sampler = Sampler(seed=0, eos_token_ids={EOS})
    parent = _seq(compiler, n=3, schema={"enum": ["ab", "ac", "b"]})
    # The parent's one logits row, copied for completions 0..2: each draws from its own (fresh) matcher.
    assert sampler.sample(torch.zeros(3, VOCAB), [parent] * 3, [0, 1, 2]).token_ids == [ord('"')] * 3
    assert len(sampler.grammars) == 3
    family = [parent, parent.fork(1), parent.fork(2)]  # as the scheduler forks, then appends each one's tokens
    for seq, text in zip(family, ['"a', '"a', '"b']):
        seq.token_ids += list(text.encode())
    allowed = []
    for seq in family:
        row = torch.zeros(1, VOCAB)
        sampler.sample(row, [seq])
        allowed.append(torch.isfinite(row[0]).nonzero().flatten().tolist())
    assert allowed == [[ord("b"), ord("c")], [ord("b"), ord("c")], [ord('"')]]
    sampler.release("r")
    assert len(sampler.grammars) == 0


def test_a_matcher_that_meets_a_token_it_refused_ends_the_completion_with_eos(compiler, caplog):
    sampler = Sampler(seed=0, eos_token_ids={EOS})
    seq = _seq(compiler, temperature=0)
    sampler.sample(torch.zeros(1, VOCAB), [seq])
    seq.token_ids.append(ord("x"))  # not '{': only a bug elsewhere could append it
    with caplog.at_level(logging.ERROR, logger="workers.structured.masker"):
        assert sampler.sample(torch.randn(1, VOCAB), [seq]).token_ids == [EOS]
    assert "structured output of r" in caplog.text

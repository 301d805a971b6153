import numpy as np
import pytest
import torch
from llguidance.numpy import apply_token_bitmask_inplace as reference_apply

from workers.structured.bitmask import apply_token_bitmask, unpack


def _bitmask(rows: int, words: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-2**31, 2**31, (rows, words), generator=g, dtype=torch.int64).to(torch.int32)


def test_unpack_reads_bit_t_mod_32_of_word_t_div_32():
    mask = torch.zeros(1, 2, dtype=torch.int32)
    mask[0, 0] = 1 | (1 << 5)
    mask[0, 1] = -(2**31)  # bit 31 of word 1: token 63
    assert unpack(mask)[0].nonzero().flatten().tolist() == [0, 5, 63]


@pytest.mark.parametrize("vocab", [64, 70, 50])  # equal to, wider than (padded head), narrower than 32 W
def test_matches_llguidance_numpy_reference_on_the_chosen_rows_only(vocab):
    logits = torch.randn(5, vocab, generator=torch.Generator().manual_seed(1))
    rows = [1, 3, 4]
    mask = _bitmask(len(rows), 2)
    expected = logits.clone().numpy()
    sub = expected[rows].copy()
    reference_apply(sub, mask.numpy())
    expected[rows] = sub
    apply_token_bitmask(logits, torch.tensor(rows), mask)
    np.testing.assert_array_equal(logits.numpy(), expected)
    if vocab > 64:
        assert torch.isinf(logits[rows, 64:]).all()  # columns past the tokenizer's vocabulary are never drawn
    assert torch.isfinite(logits[[0, 2]]).all()

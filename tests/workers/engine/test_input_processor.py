"""Request validation and the prefix-cache salt and public prefix a sequence carries."""
import pytest

from tests.workers.engine.fakes import FakeTokenizer
from workers.engine.input_processor import InputProcessor

SYSTEM = [{"role": "system", "content": "You are a helpful assistant."}]


def processor(shared=()):
    return InputProcessor(FakeTokenizer(), max_model_len=512, kv_capacity_tokens=1024, block_size=4,
                          shared_prefixes=list(shared))


def test_the_salt_travels_on_the_sequence():
    seq = processor().make_sequence("r", "hello", cache_salt="abc")
    assert seq.cache_salt == "abc" and seq.num_public_tokens == 0 and seq.salt_block == 0
    assert processor().make_sequence("r", "hello").salt_block is None


@pytest.mark.parametrize("salt", ["", 7, "x" * 257])
def test_a_bad_salt_is_refused(salt):
    with pytest.raises(ValueError, match="cache_salt"):
        processor().make_sequence("r", "hello", cache_salt=salt)


def test_a_shared_system_prompt_is_public_for_chats_that_start_with_it():
    p = processor([SYSTEM, "plain head"])
    chat = p.make_sequence("c", messages=[*SYSTEM, {"role": "user", "content": "hi"}], cache_salt="s")
    assert chat.num_public_tokens == len(FakeTokenizer().apply_chat_template(SYSTEM, add_generation_prompt=False))
    assert chat.salt_block == chat.num_public_tokens // 4
    other = p.make_sequence("o", messages=[{"role": "system", "content": "Another."},
                                           {"role": "user", "content": "hi"}], cache_salt="s")
    assert other.num_public_tokens == 0
    assert p.make_sequence("t", "plain head and more", cache_salt="s").num_public_tokens == len("plain head")


def test_the_longest_matching_public_prefix_wins():
    p = processor(["ab", "abcdef", "abc"])
    assert p.public_prefix_len(list(b"abcdefgh")) == 6
    assert p.public_prefix_len(list(b"abcx")) == 3
    assert p.public_prefix_len(list(b"ab")) == 2  # the whole prompt public: its last block still recomputes


@pytest.mark.parametrize("bad", ["", [], [{"role": "system"}], 3])
def test_bad_shared_prefixes_are_refused_by_the_config(bad):
    from workers.config import EngineConfig
    with pytest.raises(ValueError, match="shared_prefixes"):
        EngineConfig(shared_prefixes=[bad])


def test_a_prompt_far_past_the_limit_is_refused_from_its_head_alone():
    """A megabyte of prompt is not tokenized to find it too long: its head (cut at a space) already is."""
    p = processor()
    seen = []
    real = p.tokenizer.encode
    p.tokenizer.encode = lambda text: (seen.append(len(text)), real(text))[1]
    with pytest.raises(ValueError, match=r"^prompt is more than \d+ tokens, longer than max_model_len 512"):
        p.make_sequence("r", "word " * 200_000)
    assert seen and max(seen) <= 512 * 8
    seen.clear()
    with pytest.raises(ValueError, match=r"^prompt is 600 tokens, longer than max_model_len 512"):
        p.make_sequence("r", "x" * 600)  # near the limit: counted whole, the exact count in the message
    assert seen == [600]
    assert p.make_sequence("r", "ok " * 100).num_prompt_tokens == 300

import pytest

from workers.model.gguf_loader import read_gguf
from workers.model.tokenizer import Tokenizer
import itertools

TEXTS = [
    "Hello, world!",
    "  leading spaces and   runs of them",
    "123 + 4567 = 4690; 3.14159",
    " 2024年 東京 🚀🔥 emoji 👩‍👩‍👧",
    "def f(x):\n    return x**2\n\n",
    "<|im_start|>user\nhi<|im_end|>",
    "tabs\tand\r\nnewlines\n\n\n",
    "naïve café résumé ünïcödé Ωμέγα",
    "I'm sure you're right, they'll see",
    "    ",
    "a\u200bzero-width and a\u00a0nbsp",
    "x=1;y=22;z=333 // {\"json\": [1, 2]}",
]

CONVERSATIONS = [
    [{"role": "user", "content": "What is 2+2?"}],
    [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi 👋"},
     {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}],
]


@pytest.fixture(scope="module")
def tokenizer(gguf_path):
    return Tokenizer.from_gguf_metadata(read_gguf(gguf_path, with_tensors=False).metadata)


def test_special_ids_and_vocab(tokenizer):
    assert tokenizer.vocab_size == 49152
    assert tokenizer.bos_token_id == 1 and tokenizer.eos_token_ids == {2}
    assert tokenizer.encode("<|im_start|>") == [1]


@pytest.mark.parametrize("text", TEXTS)
def test_ids_match_transformers_gguf_tokenizer(tokenizer, hf_tokenizer, text):
    assert tokenizer.encode(text) == hf_tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(tokenizer.encode(text), skip_special_tokens=False) == text


def test_decode_skips_special_tokens(tokenizer):
    ids = tokenizer.encode("<|im_start|>assistant\nok<|im_end|>")
    assert tokenizer.decode(ids) == "assistant\nok"


@pytest.mark.parametrize("messages", CONVERSATIONS)
def test_chat_template_matches_transformers(tokenizer, hf_tokenizer, messages):
    for gen in (True, False):
        want = hf_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)
        assert tokenizer.render_chat(messages, add_generation_prompt=gen) == want
        assert tokenizer.apply_chat_template(messages, add_generation_prompt=gen) == \
            hf_tokenizer.encode(want, add_special_tokens=False)


def test_folder_tokenizer_round_trips(tokenizer, tmp_path):
    import json

    tokenizer.backend.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"eos_token": "<|im_end|>", "bos_token": "<|im_start|>", "chat_template": tokenizer.chat_template}))
    again = Tokenizer.from_folder(tmp_path)
    assert again.eos_token_ids == {2} and again.bos_token_id == 1
    assert again.encode(TEXTS[3]) == tokenizer.encode(TEXTS[3])
    assert again.apply_chat_template(CONVERSATIONS[1]) == tokenizer.apply_chat_template(CONVERSATIONS[1])


def test_unknown_pre_tokenizer_is_refused(gguf_path):
    md = dict(read_gguf(gguf_path, with_tensors=False).metadata)
    md["tokenizer.ggml.pre"] = "mystery"
    with pytest.raises(ValueError, match="mystery"):
        Tokenizer.from_gguf_metadata(md)


def test_a_long_text_encodes_the_same_without_holding_the_gil(tokenizer):
    """Past GIL_FREE_CHARS the text goes through encode_batch, which lets other threads (the server's event
    loop) run meanwhile; the ids are the same as encode's."""
    import threading
    import time

    from workers.model.tokenizer import GIL_FREE_CHARS

    text = "".join(TEXTS) * 2000  # ~600 KB: about a second of tokenizing on one core
    assert len(text) > GIL_FREE_CHARS
    ticks, done = [], threading.Event()

    def tick() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.005)

    ticker = threading.Thread(target=tick)
    ticker.start()
    started = time.perf_counter()
    ids = tokenizer.encode(text)
    elapsed = time.perf_counter() - started
    done.set()
    ticker.join()
    assert ids == tokenizer.backend.encode(text, add_special_tokens=False).ids
    gaps = [b - a for a, b in itertools.pairwise(ticks) if a >= started]
    assert gaps and max(gaps) < max(0.25, elapsed / 2), (max(gaps), elapsed)  # the other thread kept running

"""OpenAI chunk dicts -> GenerationChunks: counts from the upstream's usage (once), else the gateway's; the
finishing chunk waits for the usage; tool-call deltas kept whole (index added where a server leaves it out)."""
from __future__ import annotations

from gateway.upstreams.assembler import ChunkAssembler
from gateway.upstreams.tokens import TokenCounter


def chunk(content=None, *, finish=None, tool_calls=None, index=0):
    delta = {k: v for k, v in (("content", content), ("tool_calls", tool_calls)) if v is not None}
    return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def test_the_finishing_chunk_carries_the_upstreams_usage():
    a = ChunkAssembler(n=1, prompt_tokens=99, counter=TokenCounter())
    assert a.feed({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}) == []  # role only
    (first,) = a.feed(chunk("Hello"))
    assert first.text == "Hello" and first.prompt_tokens == 99 and first.metered_by == "gateway"
    assert a.feed(chunk(finish="stop")) == []  # held for the usage chunk
    assert a.feed({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7,
                                            "prompt_tokens_details": {"cached_tokens": 3}}}) == []
    last = a.end()
    assert last.finish_reason == "stop" and last.metered_by == "upstream"
    assert (last.prompt_tokens, last.completion_tokens, last.cached_tokens) == (5, 2, 3)


def test_without_usage_the_gateway_counts_and_a_cut_stream_has_no_end():
    a = ChunkAssembler(n=1, prompt_tokens=4, counter=TokenCounter())
    a.feed(chunk("abcdefgh"))  # 8 bytes: 2 tokens by the byte bound
    assert a.end() is None  # never finished
    a.feed(chunk(finish="length"))
    last = a.end()
    assert (last.prompt_tokens, last.completion_tokens, last.metered_by) == (4, 2, "gateway")


def test_tool_call_deltas_get_an_index_and_empty_lists_are_no_calls():
    a = ChunkAssembler(n=1, prompt_tokens=1, counter=TokenCounter())
    assert a.feed(chunk("", tool_calls=[])) == []  # vLLM's `tool_calls: []`
    (c,) = a.feed(chunk(tool_calls=[{"id": "c1", "function": {"name": "f", "arguments": ""}},
                                    {"id": "c2", "function": {"name": "g", "arguments": "{}"}}]))
    assert [t["index"] for t in c.completions[0].tool_calls] == [0, 1]


def test_n_choices_finish_together():
    a = ChunkAssembler(n=2, prompt_tokens=1, counter=TokenCounter())
    (c,) = a.feed(chunk("x", finish="stop", index=1))
    assert c.finish_reason is None and c.completions[0].finish_reason == "stop"  # choice 1 done, the request not
    assert a.feed(chunk("y", finish="stop", index=0)) == []
    assert a.end().finish_reason == "stop"


def test_logprobs_are_kept_by_token_text_in_both_shapes():
    a = ChunkAssembler(n=1, prompt_tokens=1, counter=TokenCounter())
    chat = {"content": [{"token": "Hi", "logprob": -0.25, "top_logprobs": [{"token": "Yo", "logprob": None}]}]}
    (out,) = a.feed({"choices": [{"index": 0, "delta": {"content": "Hi"}, "logprobs": chat}]})
    (lp,) = out.completions[0].logprobs
    assert (lp.token, lp.logprob, lp.top_tokens) == ("Hi", -0.25, (("Yo", -9999.0),))  # null: OpenAI's floor
    b = ChunkAssembler(n=1, prompt_tokens=1, counter=TokenCounter())
    legacy = {"tokens": [" a", " b"], "token_logprobs": [-1.0, -2.0], "top_logprobs": [{" c": -3.0}, {}]}
    (out,) = b.feed({"choices": [{"index": 0, "text": " a b", "logprobs": legacy}]})
    assert [(x.token, x.logprob, x.top_tokens) for x in out.completions[0].logprobs] == [
        (" a", -1.0, ((" c", -3.0),)), (" b", -2.0, ())]
    assert b.feed({"choices": [{"index": 0, "text": "", "logprobs": "junk"}]}) == []  # malformed: ignored

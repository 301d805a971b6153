"""The replica's wire format, and VersionServer.generate over the fake runner (no Ray cluster)."""
from __future__ import annotations

import msgspec
import pytest
from prometheus_client import CollectorRegistry

from tests.workers.engine.fakes import FakeRunner, fake_config
from workers.config import EngineConfig
from workers.engine.async_engine import AsyncEngine
from workers.outputs import CompletionOutput, RequestOutput, TokenLogprob
from workers.serve.protocol import (Chunk, ChunkWriter, Completion, Logprob, Request, decode_chunk,
                                    decode_request, encode, sampling_params, schedule_params)


def test_sampling_params_take_the_new_fields_and_name_a_bad_one():
    p = sampling_params(Request(request_id="x", prompt="hi", max_tokens=5, n=2, logprobs=3, min_p=0.1, min_tokens=1,
                                repetition_penalty=1.1, presence_penalty=0.5, frequency_penalty=-0.5,
                                include_stop_str_in_output=True, skip_special_tokens=False, stop_token_ids=[7]))
    assert (p.n, p.logprobs, p.min_p, p.min_tokens, p.stop_token_ids) == (2, 3, 0.1, 1, [7])
    assert sampling_params(Request(request_id="x", max_tokens=3)).n == 1  # unset: SamplingParams' defaults
    with pytest.raises(ValueError, match="frequency_penalty"):
        sampling_params(Request(request_id="x", frequency_penalty=3))


def test_a_request_round_trips_as_msgpack_and_sends_only_what_differs_from_the_defaults():
    request = Request(request_id="q", version="m@v1", messages=[{"role": "user", "content": "hi"}], n=2,
                      temperature=0.5, stop=["\n"], logprobs=1, structured={"kind": "json_object"}, priority=-3,
                      tenant="t-hmac", tenant_weight=2.0, cache_salt="salt")
    data = encode(request)
    assert isinstance(data, bytes) and b"max_tokens" not in data  # a default is not sent
    back = decode_request(data)
    assert back == request
    assert schedule_params(back).priority == -3 and schedule_params(back).weight == 2.0
    assert decode_request(encode(Request(request_id="d"))) == Request(request_id="d")


def test_a_field_of_the_wrong_type_is_refused_on_decode_naming_it():
    with pytest.raises(ValueError, match="max_tokens"):
        decode_request(msgspec.msgpack.encode({"request_id": "q", "max_tokens": "five"}))
    # A field this replica does not know (a newer gateway) is skipped, not refused: rolling upgrades.
    assert decode_request(msgspec.msgpack.encode({"request_id": "q", "later_field": 1})) == Request(request_id="q")


def test_an_n_1_chunk_round_trips():
    out = RequestOutput("r", "p", [1, 2, 3], [CompletionOutput(0, "hi", [5, 6], "length")], True, 2, 1,
                        engine_ms=1.5)
    chunk = ChunkWriter()(out)
    assert chunk == Chunk("hi", [5, 6], 3, 2, 1, "length", None, None,
                          [Completion(0, "hi", [5, 6], "length", None, None)], 1.5)
    assert decode_chunk(encode(chunk)) == chunk


def test_n_chunks_finish_at_the_top_level_only_when_every_completion_has():
    write = ChunkWriter()
    lp = TokenLogprob(5, -0.25, ((5, -0.25), (9, -2.0)))
    early = write(RequestOutput("r", None, [1], [CompletionOutput(0, "a", [5], "stop", [lp], -0.25),
                                                 CompletionOutput(1, "b", [6], None, [lp], -0.25)], False, 2))
    assert early.finish_reason is None and early.completions[0].finish_reason == "stop"
    assert early.logprobs == [Logprob(5, -0.25, [(5, -0.25), (9, -2.0)])]
    last = write(RequestOutput("r", None, [1], [CompletionOutput(1, "c", [7], "length", [lp], -0.5)], True, 3))
    assert last.finish_reason == "stop"  # completion 0's, which finished in an earlier chunk
    assert (last.text, last.token_ids, last.logprobs) == ("", [], None)  # nothing new for completion 0
    assert [c.index for c in last.completions] == [1] and last.completion_tokens == 3
    for chunk in (early, last):
        assert decode_chunk(encode(chunk)) == chunk  # logprobs' (token_id, logprob) pairs stay tuples


def test_the_first_chunk_names_who_answered_and_an_older_chunk_without_it_still_decodes():
    first = Chunk("a", [1], 2, 1, 0, version="m@v1", replica="r1")
    assert decode_chunk(encode(first)).replica == "r1"
    older = msgspec.msgpack.encode(["a", [1], 2, 1, 0])  # only the required fields, as arrays
    assert decode_chunk(older) == Chunk("a", [1], 2, 1, 0)


async def test_version_server_streams_n_completions_with_logprobs(monkeypatch):
    from workers.serve import deployment

    def fake_engine(engine, version):
        config = EngineConfig(**engine)
        return AsyncEngine(config, FakeRunner(config), model_name=version, registry=CollectorRegistry())

    class Server(deployment.VersionServer):
        def __del__(self) -> None:  # Serve awaits the real one; the test stops the engine itself
            pass

    monkeypatch.setattr(deployment, "new_engine", fake_engine)
    monkeypatch.setattr(deployment.serve, "get_replica_context", lambda: None)  # outside a replica
    server = Server.__new__(Server)
    engine = {k: getattr(fake_config(), k) for k in ("model", "block_size", "num_kv_blocks", "max_num_seqs")}
    await Server.__init__(server, "fake@v1", engine)
    try:
        request = Request(request_id="q", prompt="some prompt", max_tokens=4, temperature=0.9, seed=3, n=2,
                          logprobs=1, ignore_eos=True)
        chunks = [decode_chunk(c) async for c in server.generate(encode(request))]
        assert chunks[0].version == "fake@v1" and chunks[-1].finish_reason == "length"
        assert all(c.finish_reason is None for c in chunks[:-1])
        for index in (0, 1):
            parts = [e for c in chunks for e in c.completions if e.index == index]
            tokens = [t for e in parts for t in e.token_ids]
            assert len(tokens) == 4 and [lp.token_id for e in parts for lp in e.logprobs] == tokens
        assert chunks[-1].completion_tokens == 8 and chunks[-1].prompt_tokens == 11
        assert [t for c in chunks for t in c.token_ids] == \
            [t for c in chunks for e in c.completions if e.index == 0 for t in e.token_ids]
    finally:
        await server._engine.stop()

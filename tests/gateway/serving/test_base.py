"""GenerationChunk.from_wire: the replica's chunk, metered engine time included."""
from gateway.serving.base import GenerationChunk
from workers.outputs import CompletionOutput, RequestOutput
from workers.serve.protocol import Chunk, ChunkWriter


def test_engine_ms_travels_from_the_engine_output_to_the_gateway_chunk():
    out = RequestOutput("r", "hi", [1, 2], [CompletionOutput(0, "x", [5], "stop")], True, 1, engine_ms=4.25)
    chunk = GenerationChunk.from_wire(ChunkWriter()(out))
    assert (chunk.engine_ms, chunk.completion_tokens, chunk.finish_reason) == (4.25, 1, "stop")


def test_a_replica_that_does_not_meter_gives_none():
    assert GenerationChunk.from_wire(Chunk("", [], 2, 0, 0)).engine_ms is None

"""What the model reads for one response: its instructions, then the previous response's conversation and
output (previous_response_id), then the new input. Plain data, no I/O."""
from __future__ import annotations

from dataclasses import dataclass

from gateway.crud.responses import Stored
from gateway.domain.errors import invalid_request
from gateway.schemas.responses import ResponseCreateRequest


@dataclass(frozen=True, slots=True)
class Conversation:
    instructions: str | None  # this response's only: OpenAI never carries instructions over to the next
    context: list[dict[str, str]]  # [{"role", "content"}] before the output; what a stored response keeps

    def engine_messages(self) -> list[dict[str, str]]:
        """The chat messages the engine renders. "developer" is the newer name for "system", which is the
        only one chat templates know."""
        head = [{"role": "system", "content": self.instructions}] if self.instructions else []
        return [{"role": "system" if m["role"] == "developer" else m["role"], "content": m["content"]}
                for m in head + self.context]

    def utf8_bytes(self) -> int:
        return sum(len(m["role"].encode()) + len(m["content"].encode()) for m in self.engine_messages())


def conversation(body: ResponseCreateRequest, previous: Stored | None) -> Conversation:
    context = []
    if previous is not None:
        context = [*previous.context, {"role": "assistant", "content": previous.output_text}]
    return Conversation(body.instructions, context + body.input_messages())


def bounded(conv: Conversation, max_bytes: int) -> Conversation:
    """`conv`, or a 400 when it is larger than this server takes (checked before anything is reserved)."""
    size = conv.utf8_bytes()
    if size > max_bytes:
        raise invalid_request(f"The conversation is {size} bytes (instructions, the previous response's "
                              f"conversation and output, and this input); at most {max_bytes} are accepted.",
                              param="input", code="input_too_large")
    return conv

"""The model's tool calls in chat's two shapes: a whole message's `tool_calls` and a stream's deltas.

The text is parsed by gateway.tools.parser; a choice that made calls and stopped of its own finishes with
"tool_calls", as OpenAI's do. A request without tools (or with tool_choice "none") is never parsed."""
from __future__ import annotations

from gateway.schemas.openai import FunctionCall, FunctionCallDelta, ToolCall, ToolCallDelta
from gateway.tools.parser import CallStream, ParsedCall, parse_calls
from gateway.tools.spec import ToolSet


def _finish(reason: str | None, called: bool) -> str | None:
    return "tool_calls" if called and reason == "stop" else reason


def offered_names(tools: ToolSet | None) -> tuple[str, ...]:
    return tuple(f.name for f in tools.offered) if tools is not None else ()


def whole(text: str, finish_reason: str | None,
          names: tuple[str, ...]) -> tuple[str | None, list[ToolCall] | None, str | None]:
    """(content, tool_calls, finish_reason) of one finished choice."""
    if not names:
        return text, None, finish_reason
    content, calls = parse_calls(text, names)
    if not calls:
        return text, None, finish_reason
    return content or None, [_call(c) for c in calls], _finish(finish_reason, True)


def _call(c: ParsedCall) -> ToolCall:
    return ToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.arguments))


class StreamedCalls:
    """Each streamed choice's text -> (content to show, tool-call deltas, finish reason)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self._streams: dict[int, CallStream] = {}

    def step(self, index: int, text: str,
             finish_reason: str | None) -> tuple[str, list[ToolCallDelta] | None, str | None]:
        if not self.names:
            return text, None, finish_reason
        stream = self._streams.setdefault(index, CallStream(self.names))
        before = stream.calls_made
        piece = stream.feed(text)
        if finish_reason is not None:
            piece.text += stream.finish().text
        deltas = [ToolCallDelta(index=before + i, id=c.id, type="function",
                                function=FunctionCallDelta(name=c.name, arguments=c.arguments))
                  for i, c in enumerate(piece.calls)]
        return piece.text, deltas or None, _finish(finish_reason, stream.calls_made > 0)

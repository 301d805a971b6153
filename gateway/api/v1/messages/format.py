"""A run's answer as an Anthropic Message: content blocks (text, tool_use), the stop reason, usage. The
pipeline's Format for whole answers (`complete`); stream.py spells the stream's events from the same parts."""
from __future__ import annotations

import json
import logging

from gateway.api.v1.pipeline.choices import Choice
from gateway.api.v1.pipeline.run import Run
from gateway.api.v1.tool_calls import offered_names
from gateway.schemas.anthropic import Message, MessageUsage, TextBlock, ToolUseBlock
from gateway.tools.parser import ParsedCall, new_call_id, parse_calls

log = logging.getLogger("tollgate.generation")


def tool_use(call: ParsedCall) -> ToolUseBlock:
    # The parser's ids are chat's ("call_..."); Anthropic's clients expect theirs ("toolu_...").
    return ToolUseBlock(id="toolu_" + call.id.removeprefix("call_"), name=call.name, input=json.loads(call.arguments))


def native_calls(calls: list[dict] | None) -> list[ParsedCall]:
    """An upstream's own tool calls (OpenAI's shape, merged from their deltas) as parsed calls; arguments that
    are not a JSON object (a call cut by the length limit) go out as an empty input rather than a 500."""
    out = []
    for call in calls or ():
        fn = call.get("function") or {}
        args = fn.get("arguments") or "{}"
        try:
            if not isinstance(json.loads(args), dict):
                args = "{}"
        except ValueError:
            args = "{}"
        out.append(ParsedCall(id=call.get("id") or new_call_id(), name=fn.get("name") or "", arguments=args))
    return out


class MessagesFormat:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.id = "msg_" + run.request_id.removeprefix("req_")
        # An upstream version calls tools natively (its calls come as they are); a pool version's text is parsed.
        info = run.svc.loaded_versions().get(run.version) if run.version else None
        self.native = info is not None and info.upstream is not None
        self.names = () if self.native else offered_names(run.job.tools)  # functions the answer is parsed for

    def usage(self) -> MessageUsage:
        run = self.run
        return MessageUsage(input_tokens=run.prompt_tokens - run.cached_tokens, output_tokens=run.completion_tokens,
                            cache_read_input_tokens=run.cached_tokens)

    def message(self, content: list[TextBlock | ToolUseBlock], stop_reason: str | None,
                stop_sequence: str | None) -> Message:
        return Message(id=self.id, content=content, model=self.run.served_as, stop_reason=stop_reason,
                       stop_sequence=stop_sequence, usage=self.usage())

    def stop(self, choice: Choice, called: bool) -> tuple[str | None, str | None]:
        """(stop_reason, stop_sequence) of a finished answer: a tool call ends the turn as tool_use, the length
        limit as max_tokens, a stop sequence names itself; any other end is end_turn."""
        if choice.finish_reason == "length":
            return "max_tokens", None
        if called:
            return "tool_use", None
        matched = self.stop_sequence(choice)
        return ("stop_sequence", matched) if matched is not None else ("end_turn", None)

    def stop_sequence(self, choice: Choice) -> str | None:
        """Which of the request's stop sequences ended the answer, if one did. The engine leaves the matched
        string out of the text but not out of the tokens: decoded, the tokens go on past the text with it."""
        stops = self.run.job.stop
        if not stops or choice.finish_reason != "stop" or not choice.token_ids or self.run.version is None:
            return None
        try:
            decoded = self.run.svc.backend.detokenize(self.run.version, choice.token_ids)
        except Exception:  # a backend that cannot decode (an upstream): then the turn just ended
            log.debug("stop sequence not identified: the tokens could not be decoded", exc_info=True)
            return None
        text = choice.text
        rest = decoded[len(text):] if decoded.startswith(text) else decoded[max(0, len(text) - 1):]
        found = [(rest.find(s), s) for s in stops if s in rest]
        return min(found)[1] if found else None

    def complete(self, choices: list[Choice]) -> Message:
        """The whole answer (the run makes one completion)."""
        choice = choices[0]
        text, calls = parse_calls(choice.text, self.names) if self.names else (choice.text, [])
        calls += native_calls(choice.tool_calls)
        content: list[TextBlock | ToolUseBlock] = [TextBlock(text=text)] if text else []
        content += [tool_use(c) for c in calls]
        return self.message(content, *self.stop(choice, bool(calls)))

"""A run's answer as a Response object: whole (`complete`, the pipeline's Format for JSON answers), or the
snapshots a stream's lifecycle events carry (stream.py spells the events themselves)."""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.domain.errors import APIError
from gateway.api.v1.pipeline.choices import Choice
from gateway.api.v1.pipeline.run import Run
from gateway.schemas.responses import (IncompleteDetails, OutputMessage, OutputText, ResponseError,
                                       ResponseObject, ResponseUsage)

# Keeps a finished response (for GET and previous_response_id); None when the request said store: false.
Save = Callable[[ResponseObject], Awaitable[Any]]


class ResponsesFormat:
    def __init__(self, run: Run, echoed: dict[str, Any], *, save: Save | None) -> None:
        hex_id = run.request_id.removeprefix("req_")
        self.run, self.echoed, self.save = run, echoed, save
        self.id, self.message_id = f"resp_{hex_id}", f"msg_{hex_id}"
        self.created_at = int(time.time())
        self.final: ResponseObject | None = None  # the whole answer, once there is one

    def message(self, text: str, status: str) -> OutputMessage:
        return OutputMessage(id=self.message_id, status=status, content=[OutputText(text=text)])

    def usage(self) -> ResponseUsage:
        run = self.run
        return ResponseUsage(input_tokens=run.prompt_tokens, output_tokens=run.completion_tokens,
                             total_tokens=run.prompt_tokens + run.completion_tokens,
                             input_tokens_details={"cached_tokens": run.cached_tokens, "cache_write_tokens": 0},
                             output_tokens_details={"reasoning_tokens": 0})

    def in_progress(self) -> ResponseObject:
        return self._response("in_progress", [])

    def finished(self, text: str, finish_reason: str | None) -> ResponseObject:
        """The answer that ran to an end of its own: completed, or incomplete at max_output_tokens."""
        if finish_reason == "length":
            self.final = self._response("incomplete", [self.message(text, "incomplete")], usage=self.usage(),
                                        incomplete_details=IncompleteDetails(reason="max_output_tokens"))
        else:
            self.final = self._response("completed", [self.message(text, "completed")], usage=self.usage(),
                                        completed_at=int(time.time()))
        return self.final

    def failed(self, text: str, error: APIError) -> ResponseObject:
        """A stream cut short (the model failed, timed out, or the budget ran out): what was made, and usage."""
        # A guardrail's block keeps its code: the client should know it was the content, not the server.
        code = error.code if error.status == 429 or error.code == "content_blocked" else "server_error"
        output = [self.message(text, "incomplete")] if text else []
        return self._response("failed", output, usage=self.usage(),
                              error=ResponseError(code=code or "server_error", message=error.message))

    def complete(self, choices: list[Choice]) -> ResponseObject:
        """The pipeline's Format, for a whole (not streamed) answer: the run makes one completion."""
        return self.finished(choices[0].text, choices[0].finish_reason)

    def _response(self, status: str, output: list[OutputMessage], **fields) -> ResponseObject:
        return ResponseObject(id=self.id, created_at=self.created_at, status=status, model=self.run.served_as,
                              output=output, **self.echoed, **fields)

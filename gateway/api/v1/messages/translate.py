"""A Messages request as the chat request the pipeline serves: the system prompt as the system turn, content
blocks as chat messages (text joined, tool_use as an assistant's tool_calls, tool_result as a tool message),
tools and tool_choice in chat's terms, and the sampling fields under chat's names. Plain data, no I/O."""
from __future__ import annotations

import json
from typing import Any

from gateway.domain.errors import invalid_request
from gateway.api.v1.body import parse
from gateway.schemas.anthropic import (CountTokensRequest, DocumentBlockParam, ImageBlockParam, MessageParam,
                                       MessagesRequest, TextBlockParam, ThinkingBlockParam, ToolResultBlockParam,
                                       ToolUseBlockParam, _Prompt)
from gateway.schemas.openai import ChatCompletionRequest

_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def chat_request(body: MessagesRequest) -> ChatCompletionRequest:
    """The chat request that asks the same of the model."""
    if body.messages[-1].role == "assistant":
        # Anthropic continues a final assistant turn ("prefill"); the engine always opens a new turn, so the
        # answer would silently differ from what the client asked for.
        raise invalid_request(f"messages.{len(body.messages) - 1}: a final assistant message (prefill) is not "
                              "supported by this server; end the conversation with a user message.",
                              param=f"messages.{len(body.messages) - 1}", code="unsupported_parameter")
    chat = _prompt_fields(body)
    chat.update(max_tokens=body.max_tokens, stream=bool(body.stream))
    if body.stop_sequences:
        chat["stop"] = body.stop_sequences
    for name in ("temperature", "top_p", "top_k"):
        if getattr(body, name) is not None:
            chat[name] = getattr(body, name)
    if body.metadata is not None and body.metadata.user_id:
        chat["user"] = body.metadata.user_id
    return _validated(chat)


def counting_request(body: CountTokensRequest) -> ChatCompletionRequest:
    """The chat request whose prompt count_tokens counts (the same prompt a message request renders)."""
    return _validated(_prompt_fields(body))


def _validated(chat: dict[str, Any]) -> ChatCompletionRequest:
    # Through the chat request's own parser: the pipeline gets exactly what a chat client would have sent.
    return parse(ChatCompletionRequest, json.dumps(chat).encode())


def _prompt_fields(body: _Prompt) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    system = body.system_text()
    if system is not None:
        messages.append({"role": "system", "content": system})
    for i, message in enumerate(body.messages):
        messages += _chat_messages(message, f"messages.{i}.content", body.model)
    if not messages:
        raise invalid_request("messages: the conversation has no text to answer.", param="messages")
    chat: dict[str, Any] = {"model": body.model, "messages": messages}
    if body.tools:
        chat["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                            "parameters": t.input_schema}} for t in body.tools]
    if body.tool_choice is not None:
        choice = body.tool_choice
        chat["tool_choice"] = (_CHOICES[choice.type] if choice.type != "tool"
                               else {"type": "function", "function": {"name": choice.name}})
    return chat


def _chat_messages(message: MessageParam, param: str, model: str) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"role": message.role, "content": message.content}]
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    calls: list[dict[str, Any]] = []

    def flush() -> None:
        if message.role == "assistant" and (texts or calls):
            out.append({"role": "assistant", "content": "".join(texts) if texts or not calls else None,
                        **({"tool_calls": list(calls)} if calls else {})})
        elif texts:
            out.append({"role": "user", "content": "".join(texts)})
        texts.clear()
        calls.clear()

    for j, block in enumerate(message.content):
        where = f"{param}.{j}"
        if isinstance(block, TextBlockParam):
            texts.append(block.text)
        elif isinstance(block, (ImageBlockParam, DocumentBlockParam)):
            raise invalid_request(f"{where}: the model `{model[:200]}` does not accept {block.type} input; "
                                  "send text.", param=where, code="unsupported_content")
        elif isinstance(block, ToolUseBlockParam):
            if message.role != "assistant":
                raise invalid_request(f"{where}: tool_use blocks belong to assistant messages.", param=where)
            calls.append({"id": block.id, "type": "function",
                          "function": {"name": block.name, "arguments": json.dumps(block.input)}})
        elif isinstance(block, ToolResultBlockParam):
            if message.role != "user":
                raise invalid_request(f"{where}: tool_result blocks belong to user messages.", param=where)
            flush()
            out.append({"role": "tool", "tool_call_id": block.tool_use_id,
                        "content": _result_text(block, where, model)})
        elif isinstance(block, ThinkingBlockParam):
            continue  # no model here thinks aloud: an earlier turn's thinking has nothing to carry
    flush()
    return out


def _result_text(block: ToolResultBlockParam, where: str, model: str) -> str:
    if block.content is None or isinstance(block.content, str):
        text = block.content or ""
    else:
        for k, part in enumerate(block.content):
            if isinstance(part, ImageBlockParam):
                raise invalid_request(f"{where}.content.{k}: the model `{model[:200]}` does not accept image "
                                      "input; send text.", param=f"{where}.content.{k}", code="unsupported_content")
        text = "".join(p.text for p in block.content)
    return f"Error: {text}" if block.is_error else text

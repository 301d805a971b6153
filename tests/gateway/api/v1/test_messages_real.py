"""/v1/messages through the official `anthropic` SDK against the real model: the same greedy answer as chat
gives, streamed and whole alike, a stop sequence found in the real tokens, and count_tokens equal to the
prompt the message is billed for."""
from __future__ import annotations

import anthropic
import pytest
from openai import OpenAI

from tests.gateway.support import FP32, make_tenant, wait_usage_rows

pytestmark = pytest.mark.model

MODEL = "smollm2-135m-instruct"
ASK = [{"role": "user", "content": "Name three colours."}]
GREEDY = {"temperature": 0}  # sent as the older SDKs do: this one has no sampling arguments


@pytest.fixture(scope="module")
def tenant(real_gateway):
    _, settings = real_gateway
    # About the engine's answers: the semantic cache must not answer for it.
    return make_tenant(settings.resolved_database_url, cache_enabled=False)


@pytest.fixture(scope="module")
def sdk(real_gateway, tenant):
    server, _ = real_gateway
    return anthropic.Anthropic(base_url=server.url, api_key=tenant[1], max_retries=0)


def test_the_answer_is_chats_answer_and_the_bill_is_what_the_client_was_told(real_gateway, tenant, sdk):
    server, settings = real_gateway
    message = sdk.messages.create(model=MODEL, max_tokens=12, messages=ASK, system="Be brief.", extra_body=GREEDY)
    chat = OpenAI(base_url=f"{server.url}/v1", api_key=tenant[1], max_retries=0).chat.completions.create(
        model=MODEL, max_tokens=12, temperature=0,
        messages=[{"role": "system", "content": "Be brief."}, *ASK])
    assert message.model == FP32 and message.content[0].text == chat.choices[0].message.content
    assert message.stop_reason == {"length": "max_tokens", "stop": "end_turn"}[chat.choices[0].finish_reason]
    usage = message.usage
    assert usage.input_tokens + usage.cache_read_input_tokens == chat.usage.prompt_tokens
    assert usage.output_tokens == chat.usage.completion_tokens
    row = wait_usage_rows(settings.resolved_database_url, tenant[0], 1)[0]
    assert row.endpoint == "/v1/messages"
    assert (row.prompt_tokens, row.completion_tokens, row.cached_tokens) == (
        usage.input_tokens + usage.cache_read_input_tokens, usage.output_tokens, usage.cache_read_input_tokens)


def test_streamed_equals_whole(sdk):
    whole = sdk.messages.create(model=MODEL, max_tokens=10, messages=ASK, extra_body=GREEDY)
    with sdk.messages.stream(model=MODEL, max_tokens=10, messages=ASK, extra_body=GREEDY) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == final.content[0].text == whole.content[0].text
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens
    prompt = [u.input_tokens + u.cache_read_input_tokens for u in (final.usage, whole.usage)]
    assert prompt[0] == prompt[1]  # the same prompt (the second read partly from the engine's prefix cache)


def test_a_stop_sequence_in_the_real_tokens(sdk):
    text = sdk.messages.create(model=MODEL, max_tokens=16, messages=ASK, extra_body=GREEDY).content[0].text
    words = text.split()
    assert len(words) >= 3, text
    stop = words[2]
    cut = sdk.messages.create(model=MODEL, max_tokens=16, messages=ASK, stop_sequences=[stop], extra_body=GREEDY)
    assert (cut.stop_reason, cut.stop_sequence) == ("stop_sequence", stop)
    assert cut.content == [] or text.startswith(cut.content[0].text)


def test_count_tokens_is_the_billed_prompt(sdk):
    count = sdk.messages.count_tokens(model=MODEL, messages=ASK, system="Be brief.")
    message = sdk.messages.create(model=MODEL, max_tokens=1, messages=ASK, system="Be brief.")
    assert count.input_tokens == message.usage.input_tokens + message.usage.cache_read_input_tokens > 5

"""Anthropic's Messages protocol spoken in OpenAI's wire format: requests out, answers and streams back."""
from gateway.upstreams.anthropic_request import DEFAULT_MAX_TOKENS, to_messages_request
from gateway.upstreams.anthropic_response import STOP_REASONS, error_from, from_message, redact, usage_from
from gateway.upstreams.anthropic_stream import StreamTranslator, UpstreamStreamError

__all__ = ["DEFAULT_MAX_TOKENS", "STOP_REASONS", "StreamTranslator", "UpstreamStreamError", "error_from",
           "from_message", "redact", "to_messages_request", "usage_from"]

"""Anthropic's Messages API in front of the gateway: POST /v1/messages and /v1/messages/count_tokens."""
from gateway.api.v1.messages.routes import router

__all__ = ["router"]

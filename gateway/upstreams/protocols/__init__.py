"""How each upstream protocol is spoken; a dict registry keyed by the catalogue's `protocol:`."""
from __future__ import annotations

from gateway.upstreams.protocols.anthropic import AnthropicProtocol
from gateway.upstreams.protocols.base import UpstreamProtocol
from gateway.upstreams.protocols.openai import OpenAIProtocol

PROTOCOLS: dict[str, UpstreamProtocol] = {"openai": OpenAIProtocol(), "anthropic": AnthropicProtocol()}

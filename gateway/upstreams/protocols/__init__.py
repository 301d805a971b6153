"""How each upstream protocol is spoken; a dict registry keyed by the catalogue's `protocol:`."""
from __future__ import annotations

from gateway.upstreams.protocols.base import UpstreamProtocol
from gateway.upstreams.protocols.openai import OpenAIProtocol

PROTOCOLS: dict[str, UpstreamProtocol] = {"openai": OpenAIProtocol()}

try:  # the translation module (gateway/upstreams/anthropic_wire.py) arrives on its own branch
    from gateway.upstreams.protocols.anthropic import AnthropicProtocol
except ImportError:  # pragma: no cover - until it is merged
    AnthropicProtocol = None
else:
    PROTOCOLS["anthropic"] = AnthropicProtocol()

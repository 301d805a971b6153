"""Versioned prompts: immutable versions, movable labels (optionally split by weight, sticky per user),
plain `{{variable}}` rendering. The API layer (gateway/api/admin/prompts.py, gateway/api/v1/prompted.py)
turns these errors into OpenAI-shaped ones."""
from gateway.prompts.errors import (InvalidTarget, MissingVariables, NoPreviousTarget, PromptError, PromptExists,
                                    PromptNotFound, UnknownOwner)
from gateway.prompts.service import PromptService
from gateway.prompts.types import LabelState, PromptRef, PromptVersion

__all__ = ["InvalidTarget", "LabelState", "MissingVariables", "NoPreviousTarget", "PromptError", "PromptExists",
           "PromptNotFound", "PromptRef", "PromptService", "PromptVersion", "UnknownOwner"]

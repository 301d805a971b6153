"""What the prompt layer raises; the API maps each to its status (404, 409, 400)."""
from __future__ import annotations


class PromptError(Exception):
    """Base: `param` is the request field the error is about, for the OpenAI error's `param`."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message, self.param = message, param


class PromptNotFound(PromptError):
    """No such prompt, version or label."""


class PromptExists(PromptError):
    """A prompt of that name already exists."""


class UnknownOwner(PromptError):
    """A prompt's owner names no tenant."""


class InvalidTarget(PromptError):
    """A label target that cannot be served: weights not summing to 100, unknown versions."""


class NoPreviousTarget(PromptError):
    """A rollback of a label that has never moved."""


class MissingVariables(PromptError):
    """The prompt needs variables the request did not send; `names` lists every one, sorted."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"Missing prompt variables: {', '.join(names)}.", param="prompt.variables")
        self.names = names

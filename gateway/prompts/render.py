"""`{{variable}}` substitution: plain text replacement, never template evaluation of anyone's input."""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from gateway.prompts.errors import MissingVariables

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


def variables_of(messages: Iterable[Mapping[str, str]]) -> list[str]:
    """Every variable the messages use, sorted."""
    return sorted({m.group(1) for msg in messages for m in VARIABLE.finditer(msg["content"])})


def render(messages: Iterable[Mapping[str, str]], variables: Mapping[str, str]) -> list[dict[str, str]]:
    """The messages with each {{name}} replaced by its value, in one pass (a value holding "{{x}}" stays
    as it is). Raises MissingVariables naming every variable not given."""
    messages = list(messages)
    missing = [name for name in variables_of(messages) if name not in variables]
    if missing:
        raise MissingVariables(missing)
    return [{**msg, "content": VARIABLE.sub(lambda m: variables[m.group(1)], msg["content"])} for msg in messages]

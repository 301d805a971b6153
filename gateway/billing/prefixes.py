"""A request's input as the waste report hashes it: its system prompt (the leading system or developer messages)
and its whole prompt, each a sha256 digest of its kind and text. Pure: no I/O, no tokenizer.

Two requests share a digest only when the text is identical, role by role: the same system prompt with another
question shares the "system" digest, the same question again shares the "prompt" digest too."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from gateway.db.models.prompt_prefix import PREVIEW_CHARS

SYSTEM_ROLES = frozenset({"system", "developer"})
KINDS = ("prompt", "system")  # longest first: a whole prompt holds its system prompt


@dataclass(frozen=True, slots=True)
class Prefix:
    kind: str  # "prompt" | "system"
    digest: str  # sha256 hex
    preview: str  # the start of what it says (for "prompt", what follows the system prompt)
    messages: tuple[dict, ...] = ()  # a system prompt's messages, for counting its tokens; () for a whole prompt


def prefixes_of(*, prompt: str | None, messages: list[dict] | None) -> list[Prefix]:
    """The whole prompt, then its system prompt when it has one that is not the whole prompt (longest first)."""
    if messages is None:
        return [Prefix("prompt", _digest("prompt", "t" + (prompt or "")), preview(prompt or ""))]
    pairs = [(m.get("role", ""), _text(m.get("content"))) for m in messages]
    lead = 0
    while lead < len(pairs) and pairs[lead][0] in SYSTEM_ROLES:
        lead += 1
    rest = pairs[lead:] or pairs  # a prompt that is all system prompt previews as itself
    whole = Prefix("prompt", _digest("prompt", "m" + _canonical(pairs)), preview("\n".join(t for _, t in rest)))
    if lead == 0 or lead == len(pairs):
        return [whole]
    system = Prefix("system", _digest("system", "m" + _canonical(pairs[:lead])),
                    preview("\n".join(t for _, t in pairs[:lead])), tuple(messages[:lead]))
    return [whole, system]


def preview(text: str) -> str:
    """The first PREVIEW_CHARS characters, runs of whitespace as one space."""
    return " ".join(text.split())[:PREVIEW_CHARS]


def _text(content) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, sort_keys=True)


def _canonical(pairs: list[tuple[str, str]]) -> str:
    # JSON keeps role and content boundaries unambiguous ("a","bc" never equals "ab","c").
    return json.dumps(pairs, ensure_ascii=False, separators=(",", ":"))


def _digest(kind: str, canonical: str) -> str:
    return hashlib.sha256(f"{kind}\n{canonical}".encode()).hexdigest()

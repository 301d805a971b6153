"""A request's input as the waste report hashes it: its system prompt (the leading system or developer messages)
and its whole prompt, each a sha256 digest of its kind and text. Pure: no I/O, no tokenizer.

Two requests share a digest only when the text is identical, role by role: the same system prompt with another
question shares the "system" digest, the same question again shares the "prompt" digest too. One pass over the
text: the whole prompt's hash goes on from the system prompt's state."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from gateway.db.models.prompt_prefix import PREVIEW_CHARS

SYSTEM_ROLES = frozenset({"system", "developer"})
# A preview folds whitespace in at most this much text: enough for PREVIEW_CHARS unless it is mostly blanks.
_PREVIEW_SOURCE = 4 * PREVIEW_CHARS


@dataclass(frozen=True, slots=True)
class Prefix:
    kind: str  # "prompt" | "system"
    digest: str  # sha256 hex
    texts: tuple[str, ...]  # what its preview shows (for "prompt", what follows the system prompt)
    messages: tuple[dict, ...] = ()  # a system prompt's messages, for counting its tokens; () for a whole prompt

    @property
    def preview(self) -> str:
        """Worked out on demand: a repeated prefix needs its preview only once."""
        return preview(self.texts)


def prefixes_of(*, prompt: str | None, messages: list[dict] | None) -> list[Prefix]:
    """The whole prompt, then its system prompt when it has one that is not the whole prompt (longest first)."""
    h = hashlib.sha256(b"t" if messages is None else b"m")  # a completion prompt is never a chat's messages
    if messages is None:
        _feed(h, "", prompt or "")
        return [Prefix("prompt", _final("prompt", h), (prompt or "",))]
    pairs = [(m.get("role", ""), _text(m.get("content"))) for m in messages]
    lead = 0
    while lead < len(pairs) and pairs[lead][0] in SYSTEM_ROLES:
        lead += 1
    for role, text in pairs[:lead]:
        _feed(h, role, text)
    system = _final("system", h)
    for role, text in pairs[lead:]:
        _feed(h, role, text)
    rest = pairs[lead:] or pairs  # a prompt that is all system prompt previews as itself
    whole = Prefix("prompt", _final("prompt", h), tuple(t for _, t in rest))
    if lead == 0 or lead == len(pairs):
        return [whole]
    return [whole, Prefix("system", system, tuple(t for _, t in pairs[:lead]), tuple(messages[:lead]))]


def preview(texts) -> str:
    """The first PREVIEW_CHARS characters of the texts (one after another), runs of whitespace as one space."""
    head, size = [], 0
    for text in texts:
        head.append(text[:_PREVIEW_SOURCE - size])
        size += len(head[-1])
        if size >= _PREVIEW_SOURCE:
            break
    return " ".join(" ".join(head).split())[:PREVIEW_CHARS]


def _text(content) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, sort_keys=True)


def _feed(h, role: str, text: str) -> None:
    # Length-prefixed: ("a", "bc") never hashes as ("ab", "c"), nor a role as content.
    for part in (role.encode(), text.encode()):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)


def _final(kind: str, h) -> str:
    """The digest of the text so far, in the kind's own domain (a system prompt never shares a whole prompt's)."""
    return hashlib.sha256(kind.encode() + b"\n" + h.digest()).hexdigest()

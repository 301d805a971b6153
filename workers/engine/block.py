"""One KV block's bookkeeping: plain data, the memory layer's unit."""
from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass

_HASH_BYTES = 16


def chain_hash(parent: int | None, token_ids: tuple[int, ...]) -> int:
    """A full block's identity: its tokens and, through the parent's hash, every token before it.

    A keyed-free 128-bit BLAKE2b, not Python's hash(): tuple hashes are cheap to collide on
    purpose, and a collision here would hand one request another's KV blocks."""
    h = hashlib.blake2b(digest_size=_HASH_BYTES)
    h.update(b"\x01" if parent is None else b"\x02" + parent.to_bytes(_HASH_BYTES, "little"))
    h.update(array("q", token_ids).tobytes())
    return int.from_bytes(h.digest(), "little")


def salted(parent: int | None, salt: str) -> int:
    """The root a salted chain continues from: blocks after it are found only by requests
    carrying the same salt (vLLM's `cache_salt`), so one tenant's prompts never hit another's."""
    h = hashlib.blake2b(digest_size=_HASH_BYTES, person=b"tollgate-salt")
    h.update(b"\x01" if parent is None else b"\x02" + parent.to_bytes(_HASH_BYTES, "little"))
    h.update(salt.encode())
    return int.from_bytes(h.digest(), "little")


@dataclass(slots=True)
class Block:
    block_id: int
    ref_count: int = 0
    # Set once the block is full and its KV computed; kept after the block is freed so a later
    # sequence with the same prefix can reuse it, until the block is handed out fresh (evicted).
    hash: int | None = None
    parent_hash: int | None = None  # the chain it continues (salted where the salt begins)
    token_ids: tuple[int, ...] = ()

    def forget(self) -> None:
        self.hash = None
        self.parent_hash = None
        self.token_ids = ()

"""One KV block's bookkeeping: plain data, the memory layer's unit."""
from __future__ import annotations

from dataclasses import dataclass


def chain_hash(parent: int | None, token_ids: tuple[int, ...]) -> int:
    """A full block's identity: its tokens and, through the parent's hash, every token before it."""
    return hash((parent, token_ids))


@dataclass(slots=True)
class Block:
    block_id: int
    ref_count: int = 0
    # Set once the block is full and its KV computed; kept after the block is freed so a later
    # sequence with the same prefix can reuse it, until the block is handed out fresh (evicted).
    hash: int | None = None
    parent_hash: int | None = None
    token_ids: tuple[int, ...] = ()

    def forget(self) -> None:
        self.hash = None
        self.parent_hash = None
        self.token_ids = ()

"""The KV block pool: a free list, ref counts, chained-hash prefix reuse and copy-on-write.

Knows sequences only through their token ids and block tables; never touches tensors. A block's
ref count is the number of block tables holding it: prefix-cache hits and forked siblings (n > 1)
share blocks, and a shared block is copied before anyone writes into it.

Reuse goes past the last full cached block: a prompt whose next block starts like a cached one (a chat
template's system prompt ends mid-block; prompts that differ only in their last words) gets a copy of that
block and skips the tokens they share. Only the copy's own tokens are computed, and the positions past the
shared ones are overwritten before anything reads them.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Collection
from dataclasses import dataclass

from workers.engine.block import Block, chain_hash, salted
from workers.engine.sequence import Sequence


@dataclass(slots=True)
class PrefixCacheStats:
    """Cumulative, in blocks: full prompt blocks looked up on admission, and those found cached."""

    queries: int = 0
    hits: int = 0
    evictions: int = 0
    partial_tokens: int = 0  # tokens reused from the head of a cached block past the full hits


@dataclass(frozen=True, slots=True)
class PartialHit:
    """The head of a cached block that seq's next block starts with: copy `src`, skip `num_tokens` tokens."""

    src: int
    num_tokens: int


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True) -> None:
        if num_blocks < 1:
            raise ValueError(f"num_blocks must be >= 1, got {num_blocks}")
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.blocks = [Block(i) for i in range(num_blocks)]
        self._free: deque[int] = deque(range(num_blocks))  # ref 0, no hash: handed out first
        self._evictable: OrderedDict[int, None] = OrderedDict()  # ref 0, hashed; least recent first
        self._cached: dict[int, int] = {}  # block hash -> block id
        self._num_published: dict[tuple[str, int], int] = {}  # sequence key -> leading blocks already hashed
        self._copies: list[tuple[int, int]] = []  # copy-on-write (src, dst) pairs not yet taken
        self._pinned: list[int] = []  # partial-hit sources held until their copy is taken
        # _head_key(parent hash, a published block's first k tokens) -> that block, for every k < block_size: the
        # longest head a cached block shares with a prompt is found in at most block_size - 1 lookups. Keys are
        # ints (~1.1 KB a published block instead of ~2.6 KB with the tuples kept); a hit is checked against the
        # block's own parent and tokens, so a colliding key can only hide a head, never hand out the wrong one.
        self._heads: dict[int, int] = {}
        self.stats = PrefixCacheStats()

    @property
    def num_free_blocks(self) -> int:
        return len(self._free) + len(self._evictable)

    @property
    def num_used_blocks(self) -> int:
        return self.num_blocks - self.num_free_blocks

    @property
    def num_cached_blocks(self) -> int:
        return len(self._cached)

    def find_cached_prefix(self, seq: Sequence) -> list[int]:
        """Block ids holding the longest cached run of seq's full leading blocks.

        The block holding the last token is never taken from the cache: at least one token
        must be computed so the model has logits to sample from."""
        if not self.enable_prefix_caching or seq.block_table:
            return []
        hits: list[int] = []
        parent = None
        for i in range(self._num_lookup_blocks(seq)):
            tokens = tuple(seq.block_tokens(i))
            parent = _chain_parent(seq, i, parent)
            h = chain_hash(parent, tokens)
            block_id = self._cached.get(h)
            if block_id is None or not self._matches(self.blocks[block_id], parent, tokens):
                break
            hits.append(block_id)
            parent = h
        return hits

    def find_partial(self, seq: Sequence, cached: list[int]) -> PartialHit | None:
        """The cached block whose head is the longest run of the tokens after seq's `cached` full blocks
        (leaving at least one token to compute), or None."""
        if not self.enable_prefix_caching or seq.block_table:
            return None
        i = len(cached)
        room = min(self.block_size - 1, seq.num_tokens - 1 - i * self.block_size)
        if room < 1:
            return None
        parent = _chain_parent(seq, i, self.blocks[cached[-1]].hash if cached else None)
        tokens = tuple(seq.block_tokens(i)[:room])
        for k in range(room, 0, -1):
            src = self._heads.get(_head_key(parent, tokens[:k]))
            if src is not None:
                block = self.blocks[src]
                if block.hash is not None and block.parent_hash == parent and block.token_ids[:k] == tokens[:k]:
                    return PartialHit(src, k)
        return None

    def can_allocate_slots(self, seq: Sequence, num_new_tokens: int, cached: Collection[int] = (), *,
                           reserve: int = 0, partial: PartialHit | None = None) -> bool:
        """`reserve`: blocks that must stay free afterwards (speculative drafts never take what others need)."""
        # Reusing a cached block that sits in the evictable list takes it out of the free pool.
        revived = sum(1 for b in cached if self.blocks[b].ref_count == 0)
        revived += partial is not None and self.blocks[partial.src].ref_count == 0
        needed = (self._num_blocks_needed(seq, num_new_tokens, cached, partial)
                  + (self._shared_write_block(seq) is not None))
        return needed + reserve <= self.num_free_blocks - revived

    def allocate_slots(self, seq: Sequence, num_new_tokens: int, cached: Collection[int] = (),
                       partial: PartialHit | None = None) -> bool:
        """Grow seq's block table to hold its computed tokens, `cached` (only on admission), the copy of
        `partial`'s block (only on admission) and `num_new_tokens` more; if the block the new tokens start
        in is shared (a forked sibling's partial block), give seq its own copy first (see take_copies).
        Returns False, changing nothing, when the pool is short."""
        if num_new_tokens < 0:
            raise ValueError(f"num_new_tokens must be >= 0, got {num_new_tokens}")
        if not self.can_allocate_slots(seq, num_new_tokens, cached, partial=partial):
            return False
        num_fresh = self._num_blocks_needed(seq, num_new_tokens, cached, partial)
        if not seq.block_table:
            self._count_lookup(seq, len(cached), partial)
        if (i := self._shared_write_block(seq)) is not None:
            self._copy_on_write(seq, i)
        for block_id in cached:
            self._touch(block_id)
            seq.block_table.append(block_id)
        if partial is not None:
            # Held until take_copies hands the copy to the runner: nothing may take the source before then.
            self._touch(partial.src)
            self._pinned.append(partial.src)
            dst = self._take_fresh()
            seq.block_table.append(dst)
            self._copies.append((partial.src, dst))
            num_fresh -= 1
        for _ in range(num_fresh):
            seq.block_table.append(self._take_fresh())
        return True

    def fork(self, parent: Sequence, child: Sequence) -> None:
        """Share every block of parent's table with child (a reference each); nothing is copied
        until one of them writes into a shared block (allocate_slots)."""
        if child.block_table:
            raise ValueError(f"{child.key} already holds blocks")
        for block_id in parent.block_table:
            self.blocks[block_id].ref_count += 1
        child.block_table = list(parent.block_table)
        if parent.key in self._num_published:
            self._num_published[child.key] = self._num_published[parent.key]

    def take_copies(self) -> list[tuple[int, int]]:
        """The (src, dst) block copies allocate_slots decided since the last call. The runner must
        run them before the next forward pass writes any KV: each dst's owner reads the src's KV."""
        copies, self._copies = self._copies, []
        for block_id in self._pinned:  # the runner copies before the next allocation can reuse a source
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                self._release(block)
        self._pinned = []
        return copies

    def cache_blocks(self, seq: Sequence) -> None:
        """Publish seq's full, computed blocks under their chained hashes (call after a step)."""
        if not self.enable_prefix_caching:
            return
        start = self._num_published.get(seq.key, 0)
        end = seq.num_computed_tokens // self.block_size
        parent = self.blocks[seq.block_table[start - 1]].hash if start else None
        for i in range(start, end):
            block = self.blocks[seq.block_table[i]]
            parent = _chain_parent(seq, i, parent)
            if block.hash is None:
                tokens = tuple(seq.block_tokens(i))
                block.hash, block.parent_hash, block.token_ids = chain_hash(parent, tokens), parent, tokens
                # A twin computed concurrently may own the hash already; keep that one published.
                if self._cached.setdefault(block.hash, block.block_id) == block.block_id:
                    self._heads.update(dict.fromkeys(_head_keys(parent, tokens), block.block_id))
            parent = block.hash
        self._num_published[seq.key] = max(start, end)

    def trim(self, seq: Sequence) -> None:
        """Give back seq's blocks past those its tokens occupy: slots allocated for speculative drafts that
        the target rejected. Their KV is never hashed (cache_blocks publishes computed tokens only)."""
        keep = -(-seq.num_tokens // self.block_size)
        for block_id in reversed(seq.block_table[keep:]):
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                self._release(block)
        del seq.block_table[keep:]

    def free(self, seq: Sequence) -> None:
        # Tail blocks first, so they are evicted before the shared heads of the same sequence.
        for block_id in reversed(seq.block_table):
            block = self.blocks[block_id]
            if block.ref_count < 1:
                raise RuntimeError(f"block {block_id} of {seq.request_id!r} freed twice")
            block.ref_count -= 1
            if block.ref_count == 0:
                self._release(block)
        seq.block_table = []
        self._num_published.pop(seq.key, None)

    def _shared_write_block(self, seq: Sequence) -> int | None:
        """Index in seq's table of the block its next token goes into, when other tables hold it too."""
        i = seq.num_computed_tokens // self.block_size
        if i < len(seq.block_table) and self.blocks[seq.block_table[i]].ref_count > 1:
            return i
        return None

    def _copy_on_write(self, seq: Sequence, i: int) -> None:
        # Shared blocks past the computed tokens are never full and never hashed: only the copy's
        # owner will fill it. The other holders keep the original.
        src = seq.block_table[i]
        dst = self._take_fresh()
        self.blocks[src].ref_count -= 1
        seq.block_table[i] = dst
        self._copies.append((src, dst))

    def _num_lookup_blocks(self, seq: Sequence) -> int:
        return (seq.num_tokens - 1) // self.block_size

    def _num_blocks_needed(self, seq: Sequence, num_new_tokens: int, cached: Collection[int],
                           partial: PartialHit | None = None) -> int:
        held = len(seq.block_table) + len(cached)
        reused = held * self.block_size + (partial.num_tokens if partial else 0) if cached or partial else 0
        num_tokens = max(seq.num_computed_tokens, reused) + num_new_tokens
        return max(0, -(-num_tokens // self.block_size) - held)

    @staticmethod
    def _matches(block: Block, parent: int | None, tokens: tuple[int, ...]) -> bool:
        # Guards against hash collisions: the block must hold exactly these tokens after this parent.
        return block.parent_hash == parent and block.token_ids == tokens

    def _count_lookup(self, seq: Sequence, num_hits: int, partial: PartialHit | None) -> None:
        if self.enable_prefix_caching:
            self.stats.queries += self._num_lookup_blocks(seq)
            self.stats.hits += num_hits
            self.stats.partial_tokens += partial.num_tokens if partial else 0

    def _touch(self, block_id: int) -> None:
        block = self.blocks[block_id]
        if block.ref_count == 0:
            del self._evictable[block_id]
        block.ref_count += 1

    def _take_fresh(self) -> int:
        if self._free:
            block_id = self._free.popleft()
        else:
            block_id, _ = self._evictable.popitem(last=False)
            self._evict(self.blocks[block_id])
        self.blocks[block_id].ref_count = 1
        return block_id

    def _evict(self, block: Block) -> None:
        if block.hash is not None and self._cached.get(block.hash) == block.block_id:
            del self._cached[block.hash]
            for key in _head_keys(block.parent_hash, block.token_ids):
                if self._heads.get(key) == block.block_id:
                    del self._heads[key]
        block.forget()
        self.stats.evictions += 1

    def _release(self, block: Block) -> None:
        if block.hash is not None and self._cached.get(block.hash) == block.block_id:
            self._evictable[block.block_id] = None
        else:  # partial, or a twin whose hash another block publishes: nothing to keep
            block.forget()
            self._free.append(block.block_id)


def _head_key(parent: int | None, head: tuple[int, ...]) -> int:
    return hash((parent, head))


def _head_keys(parent: int | None, tokens: tuple[int, ...]) -> list[int]:
    """The index keys of a full block's heads: its first 1 .. block_size - 1 tokens."""
    return [_head_key(parent, tokens[:k]) for k in range(1, len(tokens))]


def _chain_parent(seq: Sequence, i: int, parent: int | None) -> int | None:
    """The parent block i hashes under: the salt joins the chain at the first non-public block."""
    return salted(parent, seq.cache_salt) if i == seq.salt_block and seq.cache_salt is not None else parent

import pytest

from workers.engine.block_manager import BlockManager
from workers.engine.sequence import Sequence
from workers.sampling_params import SamplingParams

BS = 4


def make_seq(tokens, rid="r"):
    return Sequence(rid, list(tokens), len(tokens), SamplingParams(), BS)


def compute(bm, seq, n, cached=()):
    """What the scheduler + runner do for one chunk: allocate, compute, publish full blocks."""
    assert bm.allocate_slots(seq, n, list(cached))
    seq.num_computed_tokens += len(cached) * BS + n
    bm.cache_blocks(seq)


def assert_all_free(bm):
    assert bm.num_free_blocks == bm.num_blocks and bm.num_used_blocks == 0
    assert all(b.ref_count == 0 for b in bm.blocks)


def test_rejects_bad_sizes():
    with pytest.raises(ValueError, match="num_blocks"):
        BlockManager(0, BS)
    with pytest.raises(ValueError, match="block_size"):
        BlockManager(4, 0)


def test_allocate_and_free_counts_blocks():
    bm = BlockManager(8, BS)
    seq = make_seq(range(10))
    assert bm.can_allocate_slots(seq, 10)
    compute(bm, seq, 10)
    assert len(seq.block_table) == 3 and bm.num_used_blocks == 3
    seq.token_ids.append(99)
    assert bm.allocate_slots(seq, 1) and len(seq.block_table) == 3  # slot 11 fits the last block
    bm.free(seq)
    assert seq.block_table == []
    assert_all_free(bm)


def test_allocate_fails_without_side_effects_when_short():
    bm = BlockManager(2, BS)
    seq = make_seq(range(12))
    assert not bm.can_allocate_slots(seq, 12)
    assert not bm.allocate_slots(seq, 12)
    assert seq.block_table == [] and bm.num_free_blocks == 2


def test_double_free_is_an_error():
    bm = BlockManager(4, BS)
    seq = make_seq(range(4))
    compute(bm, seq, 4)
    table = list(seq.block_table)
    bm.free(seq)
    seq.block_table = table
    with pytest.raises(RuntimeError, match="freed twice"):
        bm.free(seq)


def test_full_blocks_are_shared_by_chained_hash_with_ref_counts():
    bm = BlockManager(16, BS)
    a = make_seq(list(range(13)), "a")
    compute(bm, a, 13)
    b = make_seq([*range(12), 77, 78], "b")
    cached = bm.find_cached_prefix(b)
    assert cached == a.block_table[:3]
    compute(bm, b, b.num_tokens - 3 * BS, cached)
    assert [bm.blocks[i].ref_count for i in a.block_table[:3]] == [2, 2, 2]
    assert bm.stats.hits == 3 and bm.stats.queries == 3 + 3
    bm.free(a)
    assert [bm.blocks[i].ref_count for i in b.block_table[:3]] == [1, 1, 1]
    bm.free(b)
    assert_all_free(bm)


def test_same_block_tokens_after_a_different_parent_do_not_match():
    bm = BlockManager(16, BS)
    a = make_seq([1, 2, 3, 4, 5, 6, 7, 8, 9], "a")
    compute(bm, a, 9)
    b = make_seq([0, 0, 0, 0, 5, 6, 7, 8, 9], "b")  # block 1 equal, block 0 not
    assert bm.find_cached_prefix(b) == []


def test_last_token_is_always_computed_even_if_fully_cached():
    bm = BlockManager(16, BS)
    a = make_seq(range(8), "a")
    compute(bm, a, 8)
    b = make_seq(range(8), "b")
    assert len(bm.find_cached_prefix(b)) == 1  # block 2 holds the last token: recomputed


def test_freed_blocks_stay_cached_until_a_fresh_block_is_needed():
    bm = BlockManager(4, BS)
    a = make_seq(range(9), "a")
    compute(bm, a, 9)  # 3 blocks: 2 full and published, 1 partial
    head, tail = a.block_table[0], a.block_table[1]
    bm.free(a)
    assert bm.num_free_blocks == 4 and bm.num_cached_blocks == 2
    b = make_seq(range(100, 103), "b")  # one block: a never-cached one goes first
    compute(bm, b, 3)
    assert bm.num_cached_blocks == 2 and bm.stats.evictions == 0
    c = make_seq(range(200, 207), "c")  # two blocks: the last unhashed one, then evict the LRU
    compute(bm, c, 7)
    assert bm.stats.evictions == 1 and tail in c.block_table  # a's tail was freed first
    assert bm.find_cached_prefix(make_seq(range(9), "d")) == [head]


def test_lru_evicts_least_recently_freed_first():
    bm = BlockManager(3, BS)
    p, q = make_seq(range(4), "p"), make_seq(range(10, 14), "q")
    compute(bm, p, 4)
    compute(bm, q, 4)
    bm.free(p)
    bm.free(q)
    r = make_seq(range(50, 58), "r")
    compute(bm, r, 8)  # the unhashed block, then one eviction: p's, freed longest ago
    assert bm.stats.evictions == 1
    assert bm.find_cached_prefix(make_seq(range(5), "p2")) == []
    assert len(bm.find_cached_prefix(make_seq(range(10, 15), "q2"))) == 1


def test_revived_cached_blocks_count_against_the_free_pool():
    bm = BlockManager(3, BS)
    a = make_seq(range(9), "a")
    compute(bm, a, 9)
    bm.free(a)
    b = make_seq([*range(8), 1, 2, 3, 4, 5], "b")
    cached = bm.find_cached_prefix(b)
    assert len(cached) == 2
    # 2 revived + 2 fresh = 4 > 3 blocks: refused without touching anything.
    assert not bm.allocate_slots(b, b.num_tokens - 8, cached)
    assert bm.num_free_blocks == 3 and b.block_table == []


def test_prefix_caching_disabled_never_shares():
    bm = BlockManager(8, BS, enable_prefix_caching=False)
    a = make_seq(range(9), "a")
    compute(bm, a, 9)
    assert bm.find_cached_prefix(make_seq(range(9), "b")) == []
    bm.free(a)
    assert bm.num_cached_blocks == 0
    assert_all_free(bm)


def test_blocks_filled_by_decoding_are_published_too():
    bm = BlockManager(8, BS)
    a = make_seq(range(3), "a")
    compute(bm, a, 3)
    for t in (90, 91, 92, 93, 94):  # decode: one token per step
        a.token_ids.append(t)
        compute(bm, a, 1)
    assert bm.num_cached_blocks == 2  # tokens 0..7 are computed: two full blocks
    b = make_seq([*a.token_ids, 7], "b")
    assert bm.find_cached_prefix(b) == a.block_table[:2]


def test_twins_computed_together_publish_one_block_and_both_free_cleanly():
    bm = BlockManager(8, BS)
    a, b = make_seq(range(5), "a"), make_seq(range(5), "b")
    compute(bm, a, 5)  # both admitted before either published: no sharing
    compute(bm, b, 5)
    assert a.block_table[0] != b.block_table[0] and bm.num_cached_blocks == 1
    bm.free(a)
    bm.free(b)
    assert_all_free(bm)
    assert bm.num_cached_blocks == 1
    assert len(bm.find_cached_prefix(make_seq(range(5), "c"))) == 1


def salted_seq(tokens, rid, salt, public=0):
    seq = make_seq(tokens, rid)
    seq.cache_salt, seq.num_public_tokens = salt, public
    return seq


def test_a_salted_prefix_is_reused_only_under_the_same_salt():
    bm = BlockManager(32, BS)
    a = salted_seq(range(13), "a", "tenant-a")
    compute(bm, a, 13)
    assert bm.find_cached_prefix(salted_seq(range(13), "b", "tenant-b")) == []
    assert bm.find_cached_prefix(make_seq(range(13), "anon")) == []  # unsalted sees nothing either
    assert bm.find_cached_prefix(salted_seq(range(13), "a2", "tenant-a")) == a.block_table[:3]


def test_unsalted_blocks_are_not_found_by_a_salted_request():
    bm = BlockManager(32, BS)
    compute(bm, make_seq(range(13), "anon"), 13)
    assert bm.find_cached_prefix(salted_seq(range(13), "b", "tenant-b")) == []


def test_a_declared_public_prefix_is_shared_across_salts_and_the_rest_is_not():
    bm = BlockManager(32, BS)
    # 9 public tokens: blocks 0 and 1 are wholly public; block 2 (tokens 8..11) is salted.
    a = salted_seq(range(13), "a", "tenant-a", public=9)
    compute(bm, a, 13)
    b = salted_seq(range(13), "b", "tenant-b", public=9)
    assert bm.find_cached_prefix(b) == a.block_table[:2]
    compute(bm, b, 13 - 2 * BS, bm.find_cached_prefix(b))
    assert b.block_table[2] != a.block_table[2]
    # tenant-b's own third block is now published under its own salt.
    assert bm.find_cached_prefix(salted_seq(range(13), "b2", "tenant-b", public=9)) == b.block_table[:3]
    assert bm.find_cached_prefix(salted_seq(range(13), "a2", "tenant-a", public=9)) == a.block_table[:3]


def test_salted_blocks_published_by_decoding_stay_in_the_salted_chain():
    bm = BlockManager(16, BS)
    a = salted_seq(range(3), "a", "s")
    compute(bm, a, 3)
    for t in (90, 91, 92, 93, 94):
        a.token_ids.append(t)
        compute(bm, a, 1)
    assert bm.find_cached_prefix(salted_seq([*a.token_ids, 7], "b", "s")) == a.block_table[:2]
    assert bm.find_cached_prefix(salted_seq([*a.token_ids, 7], "c", "other")) == []


# ---- fork and copy-on-write (n > 1) ---------------------------------------------------------


def forked(bm, tokens, n):
    """A parent whose prompt is computed, and n - 1 children sharing its blocks."""
    parent = make_seq(tokens, "req")
    compute(bm, parent, len(tokens))
    children = []
    for i in range(1, n):
        child = parent.fork(i)
        bm.fork(parent, child)
        children.append(child)
    return parent, children


def decode(bm, seq, token):
    """One decode step: the sampled token appended, then its KV slot allocated and computed."""
    seq.token_ids.append(token)
    compute(bm, seq, 1)


def refs(bm, seq):
    return [bm.blocks[b].ref_count for b in seq.block_table]


def test_fork_shares_every_block_by_reference():
    bm = BlockManager(16, BS)
    parent, (c1, c2) = forked(bm, range(10), 3)  # blocks: full, full, partial (2 of 4)
    assert c1.block_table == c2.block_table == parent.block_table
    assert refs(bm, parent) == [3, 3, 3] and bm.num_used_blocks == 3
    assert (c1.key, c2.key) == (("req", 1), ("req", 2)) and c1.num_computed_tokens == 10


def test_writing_into_a_shared_partial_block_copies_it_first():
    bm = BlockManager(16, BS)
    parent, (child,) = forked(bm, range(10), 2)
    shared = parent.block_table[2]
    decode(bm, child, 100)
    assert child.block_table[:2] == parent.block_table[:2]
    assert child.block_table[2] != shared  # its own copy ...
    assert bm.take_copies() == [(shared, child.block_table[2])]  # ... whose KV the runner copies
    assert refs(bm, parent) == [2, 2, 1] and refs(bm, child) == [2, 2, 1]
    decode(bm, parent, 200)  # the last holder writes in place: nothing to copy
    assert parent.block_table[2] == shared and bm.take_copies() == []


def test_a_full_last_prompt_block_is_not_copied():
    bm = BlockManager(16, BS)
    parent, (child,) = forked(bm, range(8), 2)
    decode(bm, child, 100)
    decode(bm, parent, 200)
    assert bm.take_copies() == []
    assert child.block_table[:2] == parent.block_table[:2] and child.block_table[2] != parent.block_table[2]


def test_copy_on_write_needs_a_free_block_and_fails_cleanly_without_one():
    bm = BlockManager(3, BS)
    parent, (child,) = forked(bm, range(10), 2)  # all 3 blocks in use, the partial one shared
    child.token_ids.append(100)
    assert not bm.can_allocate_slots(child, 1)
    assert not bm.allocate_slots(child, 1)
    assert child.block_table == parent.block_table and bm.take_copies() == []
    bm.free(parent)  # e.g. the parent was preempted: the child now holds the block alone
    assert bm.allocate_slots(child, 1) and bm.take_copies() == []


@pytest.mark.parametrize("order", ["parent-first", "children-first", "middle-first"])
def test_free_in_any_order_leaves_no_leak(order):
    bm = BlockManager(16, BS)
    parent, children = forked(bm, range(10), 3)
    for i, seq in enumerate(children):
        decode(bm, seq, 100 + i)
    decode(bm, parent, 99)
    bm.take_copies()
    family = {"parent-first": [parent, *children], "children-first": [*children, parent],
              "middle-first": [children[0], parent, children[1]]}[order]
    for seq in family[:-1]:
        bm.free(seq)
        assert bm.num_used_blocks > 0
    bm.free(family[-1])
    assert_all_free(bm)
    assert bm.num_cached_blocks == 2  # the two full prompt blocks stay reusable


def test_children_publish_their_own_full_blocks_and_reuse_the_prompts():
    bm = BlockManager(16, BS)
    parent, (child,) = forked(bm, range(6), 2)
    for t in (50, 51):
        decode(bm, child, t)  # the child fills its copy of block 1
    assert bm.num_cached_blocks == 2
    probe = make_seq([*child.token_ids, 7], "probe")
    assert bm.find_cached_prefix(probe) == child.block_table[:2]
    bm.free(parent)
    bm.free(child)
    assert_all_free(bm)


def test_fork_into_a_sequence_holding_blocks_is_an_error():
    bm = BlockManager(8, BS)
    parent, (child,) = forked(bm, range(5), 2)
    with pytest.raises(ValueError, match="already holds"):
        bm.fork(parent, child)


def test_trim_gives_back_blocks_past_the_tokens_and_never_publishes_rejected_drafts():
    bm = BlockManager(8, BS)
    seq = make_seq(range(6))
    compute(bm, seq, 6)
    seq.token_ids.append(6)  # sampled; slots for it and 4 drafts: positions 6..10, blocks 1..2
    assert bm.allocate_slots(seq, 5) and len(seq.block_table) == 3
    # The target kept one draft (token 7) and its own token 8: KV stands for positions 0..7.
    seq.token_ids += [7, 8]
    seq.num_computed_tokens = 8
    bm.trim(seq)
    assert len(seq.block_table) == 3  # 9 tokens occupy three blocks
    bm.cache_blocks(seq)
    assert bm.num_cached_blocks == 2  # blocks 0 and 1 hold computed, kept tokens only
    # No draft kept: the block reserved for positions 8..11 goes back.
    seq2 = make_seq(range(6), rid="s")
    compute(bm, seq2, 6)
    seq2.token_ids.append(6)
    assert bm.allocate_slots(seq2, 5) and len(seq2.block_table) == 3
    seq2.token_ids.append(9)
    seq2.num_computed_tokens = 7
    bm.trim(seq2)
    assert len(seq2.block_table) == 2 and bm.num_used_blocks == 5
    bm.free(seq)
    bm.free(seq2)
    assert bm.num_free_blocks == bm.num_blocks


def test_a_reserve_keeps_blocks_free_for_others():
    bm = BlockManager(4, BS)
    seq = make_seq(range(4))
    compute(bm, seq, 4)
    seq.token_ids.append(4)
    assert bm.can_allocate_slots(seq, 5, reserve=1)  # positions 4..8: two more blocks of the three free
    assert not bm.can_allocate_slots(seq, 5, reserve=2)


def admit(bm, seq):
    """The scheduler's admission: full hits, then the head of a cached block, then the rest in one chunk."""
    cached = bm.find_cached_prefix(seq)
    partial = bm.find_partial(seq, cached)
    reused = len(cached) * BS + (partial.num_tokens if partial else 0)
    assert bm.allocate_slots(seq, seq.num_tokens - reused, cached, partial)
    seq.num_computed_tokens = seq.num_tokens
    bm.cache_blocks(seq)
    return cached, partial


def test_the_head_of_a_cached_block_is_reused_through_a_copy():
    bm = BlockManager(16, BS)
    a = make_seq([1, 2, 3, 4, 5, 6, 7, 8, 9], "a")
    compute(bm, a, 9)
    # b shares block 0 and the first three tokens of block 1.
    b = make_seq([1, 2, 3, 4, 5, 6, 7, 99, 100, 101], "b")
    cached, partial = admit(bm, b)
    assert cached == a.block_table[:1]
    assert partial is not None and (partial.src, partial.num_tokens) == (a.block_table[1], 3)
    assert b.block_table[1] != a.block_table[1]  # its own block, a copy of a's
    assert bm.take_copies() == [(a.block_table[1], b.block_table[1])]
    assert bm.stats.partial_tokens == 3
    bm.free(a)
    bm.free(b)
    assert_all_free(bm)


def test_a_partial_hit_leaves_the_last_token_to_compute():
    bm = BlockManager(16, BS)
    compute(bm, make_seq([1, 2, 3, 4, 5, 6, 7, 8], "a"), 8)
    b = make_seq([1, 2, 3, 4, 5, 6, 7], "b")  # all of it cached: the head of block 1 gives two of three
    cached = bm.find_cached_prefix(b)
    partial = bm.find_partial(b, cached)
    assert len(cached) == 1 and partial is not None and partial.num_tokens == 2
    assert bm.find_partial(make_seq([1, 2, 3, 4, 5], "c"), cached) is None  # one token past the block: none


def test_a_partial_source_is_held_until_its_copy_is_taken():
    bm = BlockManager(3, BS)
    a = make_seq([1, 2, 3, 4, 5, 6, 7, 8], "a")
    compute(bm, a, 8)
    bm.free(a)  # both blocks evictable, still cached
    b = make_seq([1, 2, 3, 4, 5, 6, 9, 9, 9, 9], "b")
    cached = bm.find_cached_prefix(b)
    partial = bm.find_partial(b, cached)
    assert partial is not None and partial.num_tokens == 2
    # block 0 revived, block 1 pinned as the source, one fresh block for the copy, one for the last two tokens:
    # four blocks from a pool of three, so it is refused without touching anything.
    assert not bm.can_allocate_slots(b, 4, cached, partial=partial)
    assert not bm.allocate_slots(b, 4, cached, partial)
    assert b.block_table == [] and bm.num_free_blocks == 3
    b = make_seq([1, 2, 3, 4, 5, 6, 9], "b")
    cached = bm.find_cached_prefix(b)
    partial = bm.find_partial(b, cached)
    assert bm.allocate_slots(b, 1, cached, partial)
    src = partial.src
    assert bm.blocks[src].ref_count == 1  # pinned: no allocation before the copy may take it
    assert bm.take_copies() == [(src, b.block_table[1])]
    assert bm.blocks[src].ref_count == 0 and bm.find_cached_prefix(make_seq(range(1, 10), "c"))
    bm.free(b)
    assert_all_free(bm)


def test_partial_hits_respect_the_salt():
    bm = BlockManager(16, BS)
    compute(bm, salted_seq([1, 2, 3, 4, 5, 6, 7, 8], "a", "tenant-a"), 8)
    other = salted_seq([1, 2, 3, 4, 5, 6, 7, 9, 9], "b", "tenant-b")
    assert bm.find_partial(other, bm.find_cached_prefix(other)) is None
    assert bm.find_partial(make_seq([1, 2, 9], "anon"), []) is None
    same = salted_seq([1, 2, 3, 4, 5, 6, 7, 9, 9], "a2", "tenant-a")
    cached = bm.find_cached_prefix(same)
    assert len(cached) == 1 and bm.find_partial(same, cached).num_tokens == 3


def test_an_evicted_block_is_no_longer_a_partial_source():
    bm = BlockManager(2, BS)
    a = make_seq([1, 2, 3, 4, 5], "a")
    compute(bm, a, 5)
    bm.free(a)
    assert bm.find_partial(make_seq([1, 2, 9], "b"), []).num_tokens == 2
    for rid in ("x", "y"):  # two fresh sequences take both blocks
        s = make_seq([50, 51, 52, 53, 54], rid)
        compute(bm, s, 5)
        bm.free(s)
    assert bm.find_partial(make_seq([1, 2, 9], "b"), []) is None


def test_prefix_caching_disabled_finds_no_partial_hit():
    bm = BlockManager(8, BS, enable_prefix_caching=False)
    compute(bm, make_seq([1, 2, 3, 4, 5], "a"), 5)
    assert bm.find_partial(make_seq([1, 2, 9], "b"), []) is None

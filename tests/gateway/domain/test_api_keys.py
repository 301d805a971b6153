import hashlib

from gateway.domain.api_keys import KEY_LENGTH, generate_key, hash_key, key_matches, looks_like_key, visible_prefix


def test_keys_are_random_prefixed_and_stored_as_sha256():
    a, b = generate_key(), generate_key()
    assert a.key != b.key
    assert a.key.startswith("tg-") and len(a.key) == KEY_LENGTH
    assert a.key_hash == hashlib.sha256(a.key.encode()).hexdigest()
    assert a.prefix == a.key[:12] == visible_prefix(a.key)
    assert a.key not in (a.key_hash, a.prefix)


def test_shape_check_refuses_junk_before_any_lookup():
    key = generate_key().key
    assert looks_like_key(key)
    for junk in ["", "tg-", "sk-" + key[3:], key + "x", key[:-1], key[:-1] + "!", "tg-" + "a" * 42 + " "]:
        assert not looks_like_key(junk)


def test_key_matches_by_hash():
    new = generate_key()
    assert key_matches(new.key, new.key_hash)
    assert not key_matches(generate_key().key, new.key_hash)
    assert hash_key(new.key) == new.key_hash

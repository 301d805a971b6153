from tests.workers.engine.fakes import EOS, FakeTokenizer
from workers.engine.detokenizer import IncrementalDetokenizer

TOK = FakeTokenizer()


def feed(detok, ids, one_by_one=True):
    """Feed tokens; returns the streamed deltas of visible text."""
    deltas, sent = [], 0
    for chunk in ([[i] for i in ids] if one_by_one else [ids]):
        detok.update(chunk)
        visible = detok.visible_text(finished=False)
        deltas.append(visible[sent:])
        sent = len(visible)
    return deltas


def test_plain_ascii_streams_token_by_token():
    d = IncrementalDetokenizer(TOK, [])
    assert feed(d, TOK.encode("hi!")) == ["h", "i", "!"]


def test_multibyte_character_split_across_tokens_never_shows_replacement_char():
    d = IncrementalDetokenizer(TOK, [])
    ids = TOK.encode("é€😀")  # 2 + 3 + 4 bytes, one token each
    deltas = feed(d, ids)
    assert all("\ufffd" not in x for x in deltas)
    assert "".join(deltas) == "é€😀"
    assert deltas[:2] == ["", "é"]


def test_prompt_context_is_not_part_of_the_text():
    d = IncrementalDetokenizer(TOK, [], prompt_token_ids=TOK.encode("prompt here"))
    feed(d, TOK.encode(" ok"))
    assert d.text == " ok"


def test_flush_emits_a_dangling_incomplete_character_at_the_end():
    d = IncrementalDetokenizer(TOK, [])
    d.update(TOK.encode("a"))
    d.update([0xE2, 0x82])  # the first two bytes of "€"
    assert d.text == "a"
    d.flush()
    assert d.text.startswith("a") and d.text.endswith("\ufffd")


def test_special_tokens_are_skipped():
    d = IncrementalDetokenizer(TOK, [])
    feed(d, [*TOK.encode("ab"), EOS])
    assert d.text == "ab"


def test_stop_string_truncates_and_reports():
    d = IncrementalDetokenizer(TOK, ["STOP"])
    assert not d.update(TOK.encode("hello "))
    assert d.update(TOK.encode("STOP and more"))
    assert d.text == "hello " and d.stopped


def test_stop_string_across_token_boundaries_is_held_back_until_resolved():
    d = IncrementalDetokenizer(TOK, ["</end>"])
    deltas = feed(d, TOK.encode("ab</en"))
    assert "".join(deltas) == "ab"  # "</en" might become "</end>": held back
    assert d.update(TOK.encode("d>tail"))
    assert d.visible_text(finished=False) == "ab"


def test_false_alarm_is_released_once_it_cannot_match():
    d = IncrementalDetokenizer(TOK, ["</end>"])
    deltas = feed(d, TOK.encode("a</ex"))
    assert "".join(deltas) == "a</ex"
    assert deltas[1:4] == ["", "", ""]  # "<", "/" and "e" waited


def test_held_back_text_is_released_when_the_request_finishes():
    d = IncrementalDetokenizer(TOK, ["STOP"])
    feed(d, TOK.encode("xyST"))
    assert d.visible_text(finished=False) == "xy"
    assert d.visible_text(finished=True) == "xyST"


def test_earliest_of_several_stop_strings_wins():
    d = IncrementalDetokenizer(TOK, ["zz", "b c"])
    assert d.update(TOK.encode("a b c zz"))
    assert d.text == "a "


def test_stop_string_inside_a_multibyte_stream():
    d = IncrementalDetokenizer(TOK, ["€"])
    deltas = feed(d, TOK.encode("é€x"))
    assert d.stopped and d.text == "é" and "".join(deltas) == "é"


def test_deltas_concatenate_to_the_full_text_in_one_or_many_updates():
    text = "ünïcode ✓ and 😀 mixed"
    one = IncrementalDetokenizer(TOK, [])
    one.update(TOK.encode(text))
    many = IncrementalDetokenizer(TOK, [])
    assert "".join(feed(many, TOK.encode(text))) == text == one.text


def test_include_stop_str_keeps_the_matched_stop_string():
    d = IncrementalDetokenizer(TOK, ["END", "E"], include_stop=True)
    feed(d, TOK.encode("abcEND more"))
    assert d.stopped and d.text == "abcE"  # "E" completes first, and is kept
    d = IncrementalDetokenizer(TOK, ["END"], include_stop=True)
    feed(d, TOK.encode("abcEND more"), one_by_one=False)
    assert d.text == "abcEND"


def test_stop_strings_are_not_looked_for_within_min_tokens():
    d = IncrementalDetokenizer(TOK, ["ab"], min_tokens=3)
    feed(d, TOK.encode("abxab!"))
    assert d.stopped and d.text == "abx"  # the first "ab" came within the first 3 tokens
    d = IncrementalDetokenizer(TOK, ["ab"], min_tokens=3)
    feed(d, TOK.encode("xab"))
    assert not d.stopped and d.text == "xab"


def test_special_tokens_shown_when_not_skipped():
    d = IncrementalDetokenizer(TOK, [], skip_special_tokens=False)
    feed(d, [*TOK.encode("hi"), EOS])
    assert d.text == "hi<eos>"

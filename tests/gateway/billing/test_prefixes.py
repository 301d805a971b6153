"""What the waste report hashes of a request: its whole prompt, and its system prompt when it has one apart."""
from gateway.billing.prefixes import prefixes_of

SYSTEM = {"role": "system", "content": "You are a terse assistant."}


def _chat(*contents, system=SYSTEM):
    return [system] + [{"role": "user", "content": c} for c in contents]


def test_a_chat_has_its_whole_prompt_then_its_system_prompt():
    whole, system = prefixes_of(prompt=None, messages=_chat("What is 2+2?"))
    assert (whole.kind, system.kind) == ("prompt", "system")
    assert whole.preview == "What is 2+2?" and system.preview == "You are a terse assistant."
    assert system.messages == (SYSTEM,) and whole.messages == ()


def test_the_same_system_prompt_shares_its_digest_the_same_prompt_both():
    a, b, again = (prefixes_of(prompt=None, messages=_chat(q)) for q in ("one", "two", "one"))
    assert a[1].digest == b[1].digest == again[1].digest
    assert a[0].digest != b[0].digest and a[0].digest == again[0].digest
    other = prefixes_of(prompt=None, messages=_chat("one", system={"role": "system", "content": "Be verbose."}))
    assert other[1].digest != a[1].digest and other[0].digest != a[0].digest


def test_boundaries_and_roles_count():
    split = prefixes_of(prompt=None, messages=[{"role": "user", "content": "ab"}, {"role": "user", "content": "c"}])
    joined = prefixes_of(prompt=None, messages=[{"role": "user", "content": "a"}, {"role": "user", "content": "bc"}])
    assistant = prefixes_of(prompt=None, messages=[{"role": "user", "content": "ab"},
                                                  {"role": "assistant", "content": "c"}])
    assert len({split[0].digest, joined[0].digest, assistant[0].digest}) == 3
    # A completion prompt never shares a chat's digest, even with the same text.
    assert prefixes_of(prompt="ab", messages=None)[0].digest != \
        prefixes_of(prompt=None, messages=[{"role": "user", "content": "ab"}])[0].digest


def test_without_a_separate_system_prompt_there_is_one_prefix():
    [only] = prefixes_of(prompt=None, messages=[{"role": "user", "content": "hi"}])
    assert only.kind == "prompt"
    [all_system] = prefixes_of(prompt=None, messages=[SYSTEM])  # the system prompt is the whole prompt
    assert all_system.kind == "prompt" and all_system.preview == SYSTEM["content"]
    [completion] = prefixes_of(prompt="Once upon a time", messages=None)
    assert (completion.kind, completion.preview) == ("prompt", "Once upon a time")


def test_leading_system_and_developer_messages_make_the_system_prompt():
    messages = [SYSTEM, {"role": "developer", "content": "Answer in French."}, {"role": "user", "content": "hi"}]
    _, system = prefixes_of(prompt=None, messages=messages)
    assert system.messages == tuple(messages[:2]) and system.preview == "You are a terse assistant. Answer in French."


def test_the_preview_is_80_characters_whitespace_folded():
    [p] = prefixes_of(prompt="word\n\n  " * 40, messages=None)
    assert len(p.preview) == 80 and "  " not in p.preview and "\n" not in p.preview

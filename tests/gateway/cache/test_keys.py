import pytest

from gateway.cache.keys import Uncacheable, exact_key, namespace_key, normalise, question
from tests.gateway.cache.conftest import ask


def test_normalise_collapses_whitespace_and_case():
    assert normalise("  What   is\tTHIS? ") == "what is this?"


def test_namespace_depends_on_everything_but_the_last_question():
    base = namespace_key(ask("Q one?"))
    assert namespace_key(ask("A different question")) == base
    for changed in (ask("Q one?", tenant="t2"), ask("Q one?", model="m2"), ask("Q one?", system="Be brief."),
                    ask("Q one?", history=[{"role": "user", "content": "hi"},
                                           {"role": "assistant", "content": "hello"}]),
                    ask("Q one?", temperature=0.5), ask("Q one?", top_p=0.9),
                    ask("Q one?", stop=["\n"]), ask("Q one?", seed=1),
                    ask("Q one?", extra_params={"response_format": {"type": "text"}})):
        assert namespace_key(changed) != base
    # An answer serves other limits by being cut (truncation.py), so the limit is not part of the key.
    assert namespace_key(ask("Q one?", max_tokens=10)) == base


def test_stop_as_string_or_list_is_the_same_setting():
    assert namespace_key(ask("Q?", stop="END")) == namespace_key(ask("Q?", stop=["END"]))


def test_exact_key_uses_the_normalised_question():
    ns = namespace_key(ask("x"))
    assert exact_key(ns, "What is 2+3?") == exact_key(ns, " what IS  2+3? ")
    assert exact_key(ns, "What is 2+3?") != exact_key(ns, "What is 2+4?")


@pytest.mark.parametrize("messages", [
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    [{"role": "user", "content": "   "}],
    [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
    [{"role": "tool", "content": "42"}, {"role": "user", "content": "and?"}],
])
def test_uncacheable_shapes(messages):
    from gateway.cache import CacheRequest

    request = CacheRequest("t", "m", messages, temperature=0)
    with pytest.raises(Uncacheable):
        question(request)
        namespace_key(request)


def test_text_parts_are_joined():
    from gateway.cache import CacheRequest

    request = CacheRequest("t", "m", [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}], temperature=0)
    assert question(request) == "Hello"


@pytest.mark.parametrize("kw,field", [({"tenant_id": ""}, "tenant_id"), ({"model": ""}, "model"),
                                      ({"temperature": -1}, "temperature")])
def test_bad_requests_are_refused(kw, field):
    from gateway.cache import CacheRequest

    args = {"tenant_id": "t", "model": "m", "messages": [{"role": "user", "content": "q"}], **kw}
    with pytest.raises(ValueError, match=field):
        CacheRequest(**args)
